// Benchmark peer: @web3-storage/pail 0.5.0 behind the JSON Lines contract of
// `datarepo pail apply` (argv: --max-size N --max-key-length N):
//   {"op":"put","key":K,"value":CID}, {"op":"del","key":K},
//   {"op":"batch","puts":[[K,CID],...],"dels":[K,...]}
// each print {"root":CID}, or {"root":CID,"error":"..."} (root unchanged).
// A batch's puts go through pail/batch, then its deletes one by one. Only
// the live tree is kept: each write's additions stored, removals dropped.
import { createInterface } from 'node:readline'
import { CID } from 'multiformats/cid'
import { put, del } from '@web3-storage/pail'
import * as Batch from '@web3-storage/pail/batch'
import { ShardBlock, MaxShardSize, MaxKeyLength } from '@web3-storage/pail/shard'

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name)
  return i === -1 ? dflt : Number(process.argv[i + 1])
}
const blocks = new Map()
const fetcher = { get: async cid => blocks.get(cid.toString()) }
const apply = r => {
  for (const b of r.removals) blocks.delete(b.cid.toString())
  for (const b of r.additions) blocks.set(b.cid.toString(), b)
  root = r.root
}
const empty = await ShardBlock.create({
  maxSize: arg('--max-size', MaxShardSize),
  maxKeyLength: arg('--max-key-length', MaxKeyLength)
})
blocks.set(empty.cid.toString(), empty)
let root = empty.cid

const out = []
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue
  const op = JSON.parse(line)
  const before = root
  let res
  try {
    if (op.op === 'put') {
      apply(await put(fetcher, root, op.key, CID.parse(op.value)))
    } else if (op.op === 'del') {
      apply(await del(fetcher, root, op.key))
    } else if (op.op === 'batch') {
      if (op.puts?.length) {
        const batch = await Batch.create(fetcher, root)
        for (const [k, v] of op.puts) await batch.put(k, CID.parse(v))
        apply(await batch.commit())
      }
      for (const k of op.dels ?? []) apply(await del(fetcher, root, k))
    } else {
      throw new Error(`unknown op ${op.op}`)
    }
    res = { root: root.toString() }
  } catch (e) {
    root = before
    res = { root: root.toString(), error: String(e?.message ?? e) }
  }
  out.push(JSON.stringify(res))
  if (out.length >= 1024) { process.stdout.write(out.join('\n') + '\n'); out.length = 0 }
}
if (out.length) process.stdout.write(out.join('\n') + '\n')
