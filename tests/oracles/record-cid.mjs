// Oracle: AT Protocol records as dag-cbor. Each stdin line is a JSON record;
// each stdout line is {"cid": "<CIDv1 dag-cbor sha2-256>", "json": <the
// record re-serialized as AT Protocol JSON>} or {"error": "<message>"}.
// Parsing is @atproto/lex-json's strict lexParse; encoding is @ipld/dag-cbor.
import { lexParse, lexStringify } from '@atproto/lex-json'
import * as dagCbor from '@ipld/dag-cbor'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { createInterface } from 'node:readline'

const out = []
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  try {
    const value = lexParse(line, { strict: true })
    const bytes = dagCbor.encode(value)
    const cid = CID.createV1(dagCbor.code, await sha256.digest(bytes))
    const back = dagCbor.decode(bytes)
    out.push(JSON.stringify({ cid: cid.toString(), json: JSON.parse(lexStringify(back)) }))
  } catch (e) {
    out.push(JSON.stringify({ error: String(e.message ?? e) }))
  }
}
process.stdout.write(out.join('\n') + (out.length ? '\n' : ''))
