// The Lexicon documents @atproto/api (pinned) is built from, one JSON
// document per stdout line: the real app.bsky.* and com.atproto.* schemas
// for datarepo's tests and benchmarks.
import { schemas } from '@atproto/api'

process.stdout.write(schemas.map((doc) => JSON.stringify(doc)).join('\n') + '\n')
