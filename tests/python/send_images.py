"""The Python AT Protocol SDK posting images to `datarepo serve`: logs in,
`send_image` with a PNG and `send_images` with a PNG and a JPEG (made here
with Pillow), reads the posts back, fetches each blob with `get_blob` and
lists them with `list_blobs`.

usage: send_images.py BASE_URL HANDLE PASSWORD
Prints one JSON line: the CIDs the posts refer to, their claimed types, for
each whether `get_blob` returned the uploaded bytes, and the listed CIDs.
"""

import io
import json
import sys

from atproto import Client
from PIL import Image


def image(fmt, color):
    out = io.BytesIO()
    Image.new("RGB", (64, 48), color).save(out, format=fmt)
    return out.getvalue()


base, handle, password = sys.argv[1:4]
client = Client(base_url=base)
client.login(handle, password)
did = client.me.did
png = image("PNG", (200, 30, 30))
jpeg = image("JPEG", (30, 30, 200))
one = client.send_image(text="a picture", image=png, image_alt="a red rectangle")
two = client.send_images(text="two pictures", images=[png, jpeg], image_alts=["red", "blue"])

uploaded = {"png": png, "jpeg": jpeg}
seen = []
for post in (one, two):
    rkey = post.uri.rsplit("/", 1)[1]
    record = client.com.atproto.repo.get_record(
        {"repo": did, "collection": "app.bsky.feed.post", "rkey": rkey}
    )
    for img in record.value.embed.images:
        cid = img.image.ref.link
        data = client.com.atproto.sync.get_blob({"did": did, "cid": cid})
        kind = "png" if img.image.mime_type == "image/png" else "jpeg"
        seen.append({"cid": cid, "mimeType": img.image.mime_type, "size": img.image.size,
                     "same": data == uploaded[kind]})
listed = client.com.atproto.sync.list_blobs({"did": did}).cids
print(json.dumps({"images": seen, "listed": sorted(listed)}))
