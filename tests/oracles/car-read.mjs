// Oracle: @ipld/car reads CAR files. Each stdin line is a file path; each
// stdout line is {"roots": [cid...], "blocks": [cid...], "verified": n,
// "decoded": n}: the blocks in file order, how many hash to their CID
// (sha2-256), and how many decode as dag-cbor.
import { CarReader } from '@ipld/car'
import * as dagCbor from '@ipld/dag-cbor'
import { sha256 } from 'multiformats/hashes/sha2'
import { readFile } from 'node:fs/promises'
import { createInterface } from 'node:readline'

const out = []
for await (const path of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const reader = await CarReader.fromBytes(await readFile(path))
  const roots = (await reader.getRoots()).map(String)
  const blocks = []
  let verified = 0
  let decoded = 0
  for await (const { cid, bytes } of reader.blocks()) {
    blocks.push(String(cid))
    const digest = await sha256.digest(bytes)
    if (Buffer.compare(Buffer.from(digest.digest), Buffer.from(cid.multihash.digest)) === 0) verified++
    if (cid.code === dagCbor.code) { dagCbor.decode(bytes); decoded++ }
  }
  out.push(JSON.stringify({ roots, blocks, verified, decoded }))
}
process.stdout.write(out.join('\n') + (out.length ? '\n' : ''))
