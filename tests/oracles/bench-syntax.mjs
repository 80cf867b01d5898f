// Benchmark peer: @atproto/syntax isValidRecordKey over the keys on stdin
// (one per line), repeated ROUNDS times; prints nanoseconds per key.
import { isValidRecordKey } from '@atproto/syntax'
import { readFileSync } from 'node:fs'

const rounds = Number(process.argv[2] ?? 2000)
const keys = readFileSync(0, 'utf8').split('\n')
let valid = 0
for (let r = 0; r < 200; r++) for (const k of keys) valid += isValidRecordKey(k) ? 1 : 0 // warm up
valid = 0
const start = process.hrtime.bigint()
for (let r = 0; r < rounds; r++) for (const k of keys) valid += isValidRecordKey(k) ? 1 : 0
const ns = Number(process.hrtime.bigint() - start)
if (valid !== rounds * keys.length) throw new Error(`expected all keys valid, got ${valid}`)
console.log((ns / (rounds * keys.length)).toFixed(3))
