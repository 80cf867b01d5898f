// Oracle: @atproto/syntax's validators. Each stdin line is a JSON string;
// each stdout line is {"rkey", "tid", "nsid", "did", "handle": bool} for it.
import { isValidRecordKey, isValidTid, isValidNsid, isValidDid, isValidHandle } from '@atproto/syntax'
import { createInterface } from 'node:readline'

const out = []
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const s = JSON.parse(line)
  out.push(JSON.stringify({ rkey: isValidRecordKey(s), tid: isValidTid(s), nsid: isValidNsid(s), did: isValidDid(s), handle: isValidHandle(s) }))
}
process.stdout.write(out.join('\n') + (out.length ? '\n' : ''))
