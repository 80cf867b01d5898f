"""A consumer of datarepo's Jetstream-compatible stream in its compressed
mode, written with Python's `websockets` and `zstandard` (pinned in
requirements.lock): fetches the dictionary from /subscribe/dictionary,
connects with compress=true, checks that every binary message is one zstd
frame naming that dictionary, decompresses it and prints the event.

Usage: jetstream_compressed.py BASE_URL COUNT [COLLECTION ...]
Prints COUNT events, one JSON line each; exits 1 when they do not come
within 20 seconds.
"""

import json
import sys
import urllib.parse
import urllib.request

import zstandard
from websockets.sync.client import connect

base, count, collections = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
with urllib.request.urlopen(f"{base}/subscribe/dictionary") as answer:
    dictionary = answer.read()
    dictionary_id = int(answer.headers["Zstd-Dictionary-Id"])
decompressor = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(dictionary))

query = [("compress", "true"), ("cursor", "1")] + [("wantedCollections", c) for c in collections]
url = base.replace("http://", "ws://") + "/subscribe?" + urllib.parse.urlencode(query)
with connect(url, open_timeout=10) as socket:
    for _ in range(count):
        message = socket.recv(timeout=20)
        if not isinstance(message, bytes):
            sys.exit(f"a text message in compressed mode: {message!r}")
        if zstandard.get_frame_parameters(message).dict_id != dictionary_id:
            sys.exit("a frame that does not name the served dictionary")
        print(json.dumps(json.loads(decompressor.decompress(message))))
