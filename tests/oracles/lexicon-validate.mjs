// Oracle: @atproto/lexicon's record validation. Each stdin line is one of
//   {"docs": [lexicon documents]}       -> the documents for the lines after it
//   {"collection": NSID, "record": {}}  -> validated as a PDS does:
//                                          assertValidRecord(collection, jsonToLex(record))
// and each stdout line answers it: {"ok": true} for docs, {"valid": true} or
// {"valid": false, "error": message} for a record.
import { Lexicons, jsonToLex } from '@atproto/lexicon'
import { createInterface } from 'node:readline'

let lexicons = new Lexicons()
const out = []
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const req = JSON.parse(line)
  if (req.docs) {
    lexicons = new Lexicons(req.docs)
    out.push('{"ok":true}')
    continue
  }
  try {
    lexicons.assertValidRecord(req.collection, jsonToLex(req.record))
    out.push('{"valid":true}')
  } catch (e) {
    out.push(JSON.stringify({ valid: false, error: String(e.message) }))
  }
}
process.stdout.write(out.join('\n') + (out.length ? '\n' : ''))
