"""The Python AT Protocol SDK against `datarepo serve`, as a user runs it:
log in with a handle and password, post into one's own repository, read
the session, and be refused writing someone else's repository.

usage: login_and_write.py BASE_URL HANDLE PASSWORD OTHER_DID
Prints one JSON line of what happened.
"""

import json
import sys
import warnings

from atproto import Client, models
from atproto_client.exceptions import AtProtocolError

base, handle, password, other = sys.argv[1:5]
client = Client(base_url=base)
with warnings.catch_warnings():
    # Any warning (a profile the SDK could not fetch, say) fails the test.
    warnings.simplefilter("error")
    profile = client.login(handle, password)
session = client.com.atproto.server.get_session()
post = client.send_post("hello from the Python SDK")
refused = None
try:
    client.com.atproto.repo.create_record(
        models.ComAtprotoRepoCreateRecord.Data(
            repo=other,
            collection="app.bsky.feed.post",
            record={"$type": "app.bsky.feed.post", "text": "not mine", "createdAt": "2026-11-27T00:00:00Z"},
        )
    )
except AtProtocolError as e:
    refused = type(e).__name__
print(json.dumps({"did": session.did, "handle": session.handle, "profile": profile.did,
                  "uri": post.uri, "refused": refused}))
