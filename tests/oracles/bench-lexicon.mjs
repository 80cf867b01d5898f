// Benchmark peer: @atproto/lexicon's assertValidRecord over the records on
// stdin (one {"collection", "record"} per line), against the schemas of
// @atproto/api, each record converted with jsonToLex beforehand (as a PDS
// does before validating). Repeats ROUNDS times; prints nanoseconds per
// record. Every record must be valid.
import { schemas } from '@atproto/api'
import { Lexicons, jsonToLex } from '@atproto/lexicon'
import { readFileSync } from 'node:fs'

const rounds = Number(process.argv[2] ?? 20)
const lexicons = new Lexicons(schemas)
const inputs = readFileSync(0, 'utf8')
  .split('\n')
  .filter((l) => l.length > 0)
  .map((l) => JSON.parse(l))
  .map(({ collection, record }) => [collection, jsonToLex(record)])
const run = (n) => {
  for (let r = 0; r < n; r++) {
    for (const [collection, record] of inputs) lexicons.assertValidRecord(collection, record)
  }
}
run(Math.max(1, Math.floor(rounds / 4))) // warm up
const start = process.hrtime.bigint()
run(rounds)
const ns = Number(process.hrtime.bigint() - start)
console.log((ns / (rounds * inputs.length)).toFixed(1))
