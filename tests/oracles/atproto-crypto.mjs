// Oracle: AT Protocol's signing (@atproto/crypto). Each stdin line is a JSON
// request, each stdout line its answer:
//   {"op": "verify", "did": "did:key:…", "data": "<hex>", "sig": "<hex>"}
//     → {"valid": bool}  (verifySignature with its defaults: compact, low-S)
//   {"op": "sign", "curve": "p256"|"k256", "privateKey": "<hex>", "data": "<hex>"}
//     → {"did": "did:key:…", "sig": "<hex>"}
//   {"op": "highS", "curve": "p256"|"k256", "sig": "<hex>"}
//     → {"sig": "<hex>"}  (the same signature with s replaced by n − s)
// A request that throws answers {"error": "<message>"}.
import { P256Keypair, Secp256k1Keypair, verifySignature } from '@atproto/crypto'
import { p256 } from '@noble/curves/p256'
import { secp256k1 } from '@noble/curves/secp256k1'
import { createInterface } from 'node:readline'

const hex = (bytes) => Buffer.from(bytes).toString('hex')
const bytes = (text) => new Uint8Array(Buffer.from(text, 'hex'))
const curves = { p256, k256: secp256k1 }

async function answer(req) {
  switch (req.op) {
    case 'verify':
      return { valid: await verifySignature(req.did, bytes(req.data), bytes(req.sig)) }
    case 'sign': {
      const Keypair = req.curve === 'p256' ? P256Keypair : Secp256k1Keypair
      const keypair = await Keypair.import(bytes(req.privateKey))
      return { did: keypair.did(), sig: hex(await keypair.sign(bytes(req.data))) }
    }
    case 'highS': {
      const curve = curves[req.curve]
      const sig = curve.Signature.fromCompact(bytes(req.sig))
      const flipped = new curve.Signature(sig.r, curve.CURVE.n - sig.s)
      return { sig: hex(flipped.toCompactRawBytes()) }
    }
    default:
      throw new Error(`unknown op ${req.op}`)
  }
}

const out = []
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  try {
    out.push(JSON.stringify(await answer(JSON.parse(line))))
  } catch (e) {
    out.push(JSON.stringify({ error: String(e.message ?? e) }))
  }
}
process.stdout.write(out.join('\n') + (out.length ? '\n' : ''))
