// @skyware/jetstream, a client written for Bluesky's Jetstream, reading a
// datarepo server's /subscribe stream.
// stdin: one JSON line {"endpoint": "ws://…/subscribe", "wantedCollections",
// "wantedDids", "cursor", "count"}. stdout: the first `count` commit events
// the client emits, one JSON line each. Exits with 1 after 20 s without
// them, or on the client's error.
import { Jetstream } from '@skyware/jetstream'
import WebSocket from 'ws'
import { createInterface } from 'node:readline'

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
const { endpoint, wantedCollections, wantedDids, cursor, count } = JSON.parse(
  (await lines[Symbol.asyncIterator]().next()).value,
)
const jetstream = new Jetstream({ endpoint, wantedCollections, wantedDids, cursor, ws: WebSocket })
const seen = []
const timer = setTimeout(() => {
  console.error(`only ${seen.length} of ${count} events within 20 s`)
  process.exit(1)
}, 20_000)
jetstream.on('error', (error) => {
  console.error(`the client failed: ${error?.message ?? error}`)
  process.exit(1)
})
jetstream.on('commit', (event) => {
  seen.push(event)
  if (seen.length === count) {
    clearTimeout(timer)
    jetstream.close()
    for (const e of seen) console.log(JSON.stringify(e))
    process.exit(0)
  }
})
jetstream.start()
