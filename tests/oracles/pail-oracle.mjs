// Oracle: @web3-storage/pail 0.5.0. Reads JSON lines of operations on stdin
// and writes one JSON line per operation:
//   {"op":"init","maxSize":N,"maxKeyLength":N}       -> {"root"}
//   {"op":"put","key":K,"value":CID}                  -> {"root"} | {"root","error"}
//   {"op":"del","key":K}                              -> {"root"} | {"root","error"}
//   {"op":"batch","puts":[[K,CID],...]}              -> {"root"} | {"root","error"}  (pail/batch)
//   {"op":"seq","ops":[{"op":"put"|"del",...},...]}   -> {"root"} after all of them
//   {"op":"entries"}                                  -> {"entries":[[K,CID],...]}
//   {"op":"get","key":K}                              -> {"value": CID|null}
// Blocks are kept in memory and never dropped.
import { createInterface } from 'node:readline'
import { CID } from 'multiformats/cid'
import { put, del, get, entries } from '@web3-storage/pail'
import * as Batch from '@web3-storage/pail/batch'
import { ShardBlock } from '@web3-storage/pail/shard'

const blocks = new Map()
const fetcher = { get: async cid => blocks.get(cid.toString()) }
const store = bs => { for (const b of bs) blocks.set(b.cid.toString(), b) }
let root

const apply = async (op) => {
  if (op.op === 'put') {
    const r = await put(fetcher, root, op.key, CID.parse(op.value))
    store(r.additions); root = r.root
  } else if (op.op === 'del') {
    const r = await del(fetcher, root, op.key)
    store(r.additions); root = r.root
  } else throw new Error(`unknown op ${op.op}`)
}

const out = []
const flush = () => { if (out.length) { process.stdout.write(out.join('\n') + '\n'); out.length = 0 } }
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue
  const op = JSON.parse(line)
  let res
  try {
    if (op.op === 'init') {
      const b = await ShardBlock.create({ maxSize: op.maxSize, maxKeyLength: op.maxKeyLength })
      store([b]); root = b.cid
      res = { root: root.toString() }
    } else if (op.op === 'batch') {
      const batch = await Batch.create(fetcher, root)
      for (const [k, v] of op.puts) await batch.put(k, CID.parse(v))
      const r = await batch.commit()
      store(r.additions); root = r.root
      res = { root: root.toString() }
    } else if (op.op === 'seq') {
      const before = root
      try {
        for (const o of op.ops) await apply(o)
      } catch (e) { root = before; throw e }
      res = { root: root.toString() }
    } else if (op.op === 'entries') {
      const list = []
      for await (const [k, v] of entries(fetcher, root)) list.push([k, v.toString()])
      res = { entries: list }
    } else if (op.op === 'get') {
      const v = await get(fetcher, root, op.key)
      res = { value: v ? v.toString() : null }
    } else {
      await apply(op)
      res = { root: root.toString() }
    }
  } catch (e) {
    res = { root: root?.toString(), error: String(e?.message ?? e) }
  }
  out.push(JSON.stringify(res))
  if (op.flush) flush()
}
flush()
