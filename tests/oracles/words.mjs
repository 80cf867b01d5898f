// The words of each input line (a JSON string), as a text index cuts
// them, by JavaScript's own Unicode machinery: NFKC, lowercase, NFKC, then
// ICU's word boundaries (UAX #29), keeping the segments with a letter or
// digit, leading white space trimmed (Unicode Alphabetic or Number: ICU's own "word-like" status differs
// around underscores, and is not part of UAX #29). One JSON array of words
// per line.
import { createInterface } from "node:readline";

const segmenter = new Intl.Segmenter("und", { granularity: "word" });
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const text = JSON.parse(line).normalize("NFKC").toLowerCase().normalize("NFKC");
  const words = [];
  for (const s of segmenter.segment(text)) {
    // A combining mark after a space joins it; the space is not the word's.
    if (/[\p{Alphabetic}\p{N}]/u.test(s.segment)) words.push(s.segment.trimStart());
  }
  console.log(JSON.stringify(words));
}
