// Benchmark peer: @web3-storage/pail 0.5.0 on the workload in the JSON file
// argv[2] ({"keys": [...], "values": [...], "puts": N, "batch": N}): N single
// puts with the root after each, one batch of N puts, gets at that size, and
// a full entries scan. Blocks in memory; additions stored, removals dropped.
// Prints one JSON object of timings.
import { readFileSync } from 'node:fs'
import { CID } from 'multiformats/cid'
import { put, get, entries } from '@web3-storage/pail'
import * as Batch from '@web3-storage/pail/batch'
import { ShardBlock } from '@web3-storage/pail/shard'

const w = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const values = w.values.map(v => CID.parse(v))
const now = () => Number(process.hrtime.bigint()) / 1e9

const fresh = async () => {
  const blocks = new Map()
  const root = await ShardBlock.create()
  blocks.set(root.cid.toString(), root)
  return { blocks, fetcher: { get: async cid => blocks.get(cid.toString()) }, root: root.cid }
}
const apply = (blocks, r) => {
  for (const b of r.removals) blocks.delete(b.cid.toString())
  for (const b of r.additions) blocks.set(b.cid.toString(), b)
}

const out = {}
if (w.puts > 0) {
  const s = await fresh()
  const t = now()
  for (let i = 0; i < w.puts; i++) {
    const r = await put(s.fetcher, s.root, w.keys[i], values[i])
    apply(s.blocks, r)
    s.root = r.root
  }
  out.single_puts_s = now() - t
  out.single_puts_root = s.root.toString()
}
if (w.batch > 0) {
  const s = await fresh()
  const t = now()
  const batch = await Batch.create(s.fetcher, s.root)
  for (let i = 0; i < w.batch; i++) await batch.put(w.keys[i], values[i])
  const r = await batch.commit()
  apply(s.blocks, r)
  s.root = r.root
  out.batch_s = now() - t
  out.batch_root = s.root.toString()
  const samples = []
  for (let i = 0; i < Math.min(2000, w.batch); i++) {
    const k = w.keys[(i * 7919) % w.batch]
    const t0 = now()
    await get(s.fetcher, s.root, k)
    samples.push(now() - t0)
  }
  samples.sort((a, b) => a - b)
  out.get_median_us = samples[samples.length >> 1] * 1e6
  const t2 = now()
  let n = 0
  for await (const _ of entries(s.fetcher, s.root)) n++
  out.entries_per_s = n / (now() - t2)
}
console.log(JSON.stringify(out))
