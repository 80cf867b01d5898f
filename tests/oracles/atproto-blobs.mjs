// @atproto/api uploading a blob to a datarepo server and referring to it,
// and multiformats computing the blob's CID independently.
// stdin: one JSON line {"service", "identifier", "password", "hex"} (the
// bytes to upload, hex). stdout: one JSON line {"uploaded": blob ref as
// the server answered, "expected": the CID multiformats makes of the bytes
// (CIDv1, raw, sha2-256), "created": the post's URI, "unknown": how a
// record naming a CID never uploaded was refused}.
import { AtpAgent } from '@atproto/api'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { createInterface } from 'node:readline'

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
const { service, identifier, password, hex } = JSON.parse((await lines[Symbol.asyncIterator]().next()).value)
const bytes = new Uint8Array(Buffer.from(hex, 'hex'))
const expected = CID.create(1, raw.code, await sha256.digest(bytes)).toString()
const never = CID.create(1, raw.code, await sha256.digest(new TextEncoder().encode('never uploaded'))).toString()

const agent = new AtpAgent({ service })
await agent.login({ identifier, password })
const repo = agent.session.did
const { data } = await agent.uploadBlob(bytes, { encoding: 'image/png' })
const post = (image) => ({
  $type: 'app.bsky.feed.post',
  text: 'an image from @atproto/api',
  createdAt: new Date(0).toISOString(),
  embed: { $type: 'app.bsky.embed.images', images: [{ alt: 'a test image', image }] },
})
const created = await agent.com.atproto.repo.createRecord({ repo, collection: 'app.bsky.feed.post', record: post(data.blob) })
let unknown
try {
  await agent.com.atproto.repo.createRecord({
    repo,
    collection: 'app.bsky.feed.post',
    record: post({ $type: 'blob', ref: { $link: never }, mimeType: 'image/png', size: 10 }),
  })
  unknown = { refused: false }
} catch (e) {
  unknown = { refused: true, status: e.status, error: e.error, message: e.message }
}
const ref = data.blob.ref.toString()
process.stdout.write(JSON.stringify({
  uploaded: { ref, mimeType: data.blob.mimeType, size: data.blob.size },
  expected,
  never,
  created: created.data.uri,
  unknown,
}) + '\n')
