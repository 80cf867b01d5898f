// @atproto/api logging in to a datarepo server with a handle and password.
// stdin: one JSON line {"service", "identifier", "password", "other"}.
// stdout: one JSON line per step, {"step": name, ...result}; a failing step
// prints {"step", "error"} and stops.
import { AtpAgent } from '@atproto/api'
import { createInterface } from 'node:readline'

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
const { service, identifier, password, other } = JSON.parse((await lines[Symbol.asyncIterator]().next()).value)
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n')
const collection = 'app.bsky.feed.post'
const record = (text) => ({ $type: collection, text, createdAt: new Date(0).toISOString() })

async function step (name, fn) {
  try {
    out({ step: name, ...(await fn()) })
  } catch (e) {
    out({ step: name, error: `${e.constructor.name}: ${e.error ?? ''} ${e.message}` })
    process.exit(0)
  }
}

const agent = new AtpAgent({ service })
await step('login', async () => {
  const { data } = await agent.login({ identifier, password })
  return { did: data.did, handle: data.handle }
})
const did = agent.session.did
// More writes than one access token lives for: the agent refreshes on
// ExpiredToken by itself.
await step('writeOwn', async () => {
  const first = agent.session.accessJwt
  const uris = []
  for (let i = 0; i < 6; i++) {
    const { data } = await agent.com.atproto.repo.createRecord({ repo: did, collection, record: record(`post ${i}`) })
    uris.push(data.uri)
  }
  return { uris, refreshed: agent.session.accessJwt !== first }
})
await step('writeOther', async () => {
  try {
    await agent.com.atproto.repo.createRecord({ repo: other, collection, record: record('not mine') })
    return { refused: false }
  } catch (e) {
    return { refused: true, status: e.status, name: e.error }
  }
})
const saved = agent.session
await step('resumeSession', async () => {
  const again = new AtpAgent({ service })
  await again.resumeSession(saved)
  const { data } = await again.com.atproto.server.getSession()
  return { did: data.did }
})
await step('logout', async () => {
  await agent.logout()
  const again = new AtpAgent({ service })
  try {
    await again.resumeSession(saved)
    await again.com.atproto.server.refreshSession(undefined, { headers: { authorization: `Bearer ${saved.refreshJwt}` } })
    return { refreshAfterLogout: 'accepted' }
  } catch (e) {
    return { refreshAfterLogout: e.error ?? e.message }
  }
})
