"""A firehose consumer nobody here wrote: the Python AT Protocol SDK's
(`atproto` on PyPI) FirehoseSubscribeReposClient reads
com.atproto.sync.subscribeRepos from a datarepo server, decodes each
message with the SDK's parser and each commit's blocks with its CAR
reader, and prints one JSON line per commit:

  {"seq", "repo", "rev", "since", "commit", "time",
   "ops": [{"action", "path", "cid", "prev", "record"}]}

where "record" is the created or updated record as decoded from the
commit's CAR slice (null for a delete).

  python firehose_consumer.py BASE_URI CURSOR COUNT

BASE_URI is ws://HOST:PORT/xrpc; CURSOR the sequence number to start
after; the script exits after COUNT commits (or fails after 60 s).
"""

import json
import sys
import threading

from atproto import CAR, FirehoseSubscribeReposClient, models, parse_subscribe_repos_message


def cid_str(cid):
    return None if cid is None else str(cid)


def main():
    base_uri, cursor, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    client = FirehoseSubscribeReposClient(
        params=models.ComAtprotoSyncSubscribeRepos.Params(cursor=cursor), base_uri=base_uri
    )
    seen = []
    timed_out = []

    def on_message(message):
        commit = parse_subscribe_repos_message(message)
        if not isinstance(commit, models.ComAtprotoSyncSubscribeRepos.Commit):
            return
        car = CAR.from_bytes(commit.blocks)
        if str(car.root) != str(commit.commit):
            raise SystemExit(f'CAR root {car.root} is not the commit {commit.commit}')
        if car.blocks.get(commit.commit) is None:
            raise SystemExit(f'the commit block {commit.commit} is not in the CAR')
        ops = []
        for op in commit.ops:
            record = car.blocks.get(op.cid) if op.cid is not None else None
            if op.cid is not None and record is None:
                raise SystemExit(f'record {op.cid} of {op.path} is not in the CAR')
            ops.append(
                {
                    'action': op.action,
                    'path': op.path,
                    'cid': cid_str(op.cid),
                    'prev': cid_str(op.prev),
                    'record': record,
                }
            )
        line = {
            'seq': commit.seq,
            'repo': commit.repo,
            'rev': commit.rev,
            'since': commit.since,
            'commit': cid_str(commit.commit),
            'time': commit.time,
            'ops': ops,
        }
        print(json.dumps(line, default=str), flush=True)
        seen.append(commit.seq)
        if len(seen) >= count:
            client.stop()

    def give_up():
        timed_out.append(True)
        client.stop()

    timer = threading.Timer(60.0, give_up)
    timer.start()
    try:
        client.start(on_message)
    finally:
        timer.cancel()
    if timed_out:
        sys.exit(f'timed out after {len(seen)} of {count} commits')


if __name__ == '__main__':
    main()
