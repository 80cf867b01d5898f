// The official AT Protocol client against a datarepo server. stdin: one
// JSON line {"service", "token", "repo"}. stdout: one JSON line per step,
// {"step": name, ...result}; a failing step prints {"step", "error"} and
// stops.
import { Agent } from '@atproto/api'
import { CarReader } from '@ipld/car'
import { createInterface } from 'node:readline'

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
const { service, token, repo } = JSON.parse((await lines[Symbol.asyncIterator]().next()).value)
const agent = new Agent({ service, headers: { authorization: `Bearer ${token}` } })
const api = agent.com.atproto
const collection = 'app.bsky.feed.post'
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n')

async function step (name, fn) {
  try {
    out({ step: name, ...(await fn()) })
  } catch (e) {
    out({ step: name, error: `${e.constructor.name}: ${e.error ?? ''} ${e.message}` })
    process.exit(0)
  }
}

let created
await step('createRecord', async () => {
  const { data } = await api.repo.createRecord({
    repo, collection, record: { $type: collection, text: 'hello from @atproto/api', createdAt: new Date(0).toISOString() }
  })
  created = data
  return { uri: data.uri, cid: data.cid, rev: data.commit?.rev }
})
const rkey = created.uri.split('/').pop()
await step('getRecord', async () => {
  const { data } = await api.repo.getRecord({ repo, collection, rkey })
  return { uri: data.uri, cid: data.cid, text: data.value.text }
})
await step('putRecord', async () => {
  const { data } = await api.repo.putRecord({
    repo, collection, rkey, swapRecord: created.cid,
    record: { $type: collection, text: 'edited', createdAt: new Date(0).toISOString() }
  })
  return { uri: data.uri, cid: data.cid }
})
await step('staleSwap', async () => {
  try {
    await api.repo.putRecord({ repo, collection, rkey, swapRecord: created.cid, record: { $type: collection, text: 'x' } })
    return { rejected: false }
  } catch (e) {
    return { rejected: true, error: e.error }
  }
})
await step('applyWrites', async () => {
  const writes = [1, 2, 3].map((i) => ({
    $type: 'com.atproto.repo.applyWrites#create', collection, rkey: `batch${i}`, value: { $type: collection, text: `batch ${i}`, createdAt: new Date(0).toISOString() }
  }))
  const { data } = await api.repo.applyWrites({ repo, writes })
  return { results: data.results.length, rev: data.commit?.rev }
})
await step('listRecords', async () => {
  const first = await api.repo.listRecords({ repo, collection, limit: 2 })
  const second = await api.repo.listRecords({ repo, collection, limit: 2, cursor: first.data.cursor })
  const reversed = await api.repo.listRecords({ repo, collection, limit: 10, reverse: true })
  return {
    pages: [first.data.records.map((r) => r.uri.split('/').pop()), second.data.records.map((r) => r.uri.split('/').pop())],
    cursorAfterLast: second.data.cursor ?? null,
    reversed: reversed.data.records.map((r) => r.uri.split('/').pop())
  }
})
await step('deleteRecord', async () => {
  await api.repo.deleteRecord({ repo, collection, rkey: 'batch2' })
  try {
    await api.repo.getRecord({ repo, collection, rkey: 'batch2' })
    return { gone: false }
  } catch (e) {
    return { gone: true, error: e.error }
  }
})
await step('describeRepo', async () => {
  const { data } = await api.repo.describeRepo({ repo })
  return { did: data.did, collections: data.collections }
})
await step('getLatestCommit', async () => {
  const { data } = await api.sync.getLatestCommit({ did: repo })
  return { cid: data.cid, rev: data.rev }
})
await step('getRepo', async () => {
  const { data } = await api.sync.getRepo({ did: repo })
  const reader = await CarReader.fromBytes(data)
  const roots = (await reader.getRoots()).map(String)
  let blocks = 0
  for await (const _ of reader.blocks()) blocks++
  return { roots, blocks }
})
