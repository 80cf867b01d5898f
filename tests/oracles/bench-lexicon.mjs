// Benchmark peer: @atproto/lexicon's assertValidRecord against the schemas
// of @atproto/api, timed in rounds that the caller interleaves with its own.
//
// stdin: a line with the number of records N, then N lines
// {"collection", "record"} (each converted with jsonToLex beforehand, as a
// PDS does before validating), then one line per round holding the number of
// passes over the records to make. Each round prints nanoseconds per record.
// The records are validated (and the JIT warmed) once before the first
// round; every record must be valid.
import { schemas } from '@atproto/api'
import { Lexicons, jsonToLex } from '@atproto/lexicon'
import { createInterface } from 'node:readline'

const lexicons = new Lexicons(schemas)
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
const next = async () => {
  const { value, done } = await lines.next()
  return done ? null : value
}

const count = Number(await next())
const inputs = []
for (let i = 0; i < count; i++) {
  const { collection, record } = JSON.parse(await next())
  inputs.push([collection, jsonToLex(record)])
}
const run = (passes) => {
  for (let p = 0; p < passes; p++) {
    for (const [collection, record] of inputs) lexicons.assertValidRecord(collection, record)
  }
}
run(Math.max(1, Math.ceil(20_000 / inputs.length))) // warm up
for (let line = await next(); line !== null; line = await next()) {
  const passes = Number(line)
  const start = process.hrtime.bigint()
  run(passes)
  const ns = Number(process.hrtime.bigint() - start)
  console.log((ns / (passes * inputs.length)).toFixed(1))
}
