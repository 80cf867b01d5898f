// The XRPC API, as the only way this interface reads or writes. A token
// entered by the person is kept in sessionStorage (gone with the tab) and
// sent as the bearer header on every call, reads included, so a server
// with --private-reads works too. An account signed in (createSession) is
// kept in this page's memory only: its access token goes with every call
// instead of the token, and is refreshed when it expires.

const TOKEN_KEY = 'datarepo.token';

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) || '',
  set(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  },
};

// The signed-in account: {did, handle, accessJwt, refreshJwt}, or null.
let signedIn = null;
// A refresh under way, shared by the calls that found the token expired.
let refreshing = null;

export const session = {
  get: () => signedIn,
  /** Logs in with a handle (or DID) and password; throws an ApiError. */
  async signIn(identifier, password) {
    const s = await send('com.atproto.server.createSession', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ identifier, password }),
    }, null);
    signedIn = { did: s.did, handle: s.handle, accessJwt: s.accessJwt, refreshJwt: s.refreshJwt };
    return signedIn;
  },
  /** Logs out: the server ends the session (its refresh token). */
  async signOut() {
    const s = signedIn;
    signedIn = null;
    if (s) {
      await send('com.atproto.server.deleteSession', { method: 'POST' }, s.refreshJwt).catch(() => {});
    }
  },
};

async function refresh(s) {
  if (!refreshing) {
    refreshing = send('com.atproto.server.refreshSession', { method: 'POST' }, s.refreshJwt)
      .then((r) => {
        if (signedIn === s) {
          signedIn = { did: r.did, handle: r.handle, accessJwt: r.accessJwt, refreshJwt: r.refreshJwt };
        }
      })
      .finally(() => { refreshing = null; });
  }
  await refreshing;
}

/** An error answer of the API: `error` is the XRPC error name. */
export class ApiError extends Error {
  constructor(status, error, message) {
    super(message);
    this.status = status;
    this.error = error;
  }
}

async function call(path, init) {
  const s = signedIn;
  try {
    return await send(path, init, s ? s.accessJwt : token.get());
  } catch (e) {
    // An expired access token: refresh once, then ask again.
    if (!s || e.error !== 'ExpiredToken' || signedIn !== s) throw e;
    await refresh(s);
    return send(path, init, signedIn ? signedIn.accessJwt : token.get());
  }
}

async function send(path, init, bearer) {
  const headers = { accept: 'application/json', ...(init.headers || {}) };
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  let res;
  try {
    res = await fetch(`/xrpc/${path}`, { ...init, headers });
  } catch (e) {
    throw new ApiError(0, 'NetworkError', `the server did not answer (${e.message})`);
  }
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    throw new ApiError(res.status, body?.error || 'Error', body?.message || `HTTP ${res.status}`);
  }
  return body;
}

/** The `com.atproto.sync.getBlob` URL of blob `cid` of repository `did`. */
export function blobUrl(did, cid) {
  return `/xrpc/com.atproto.sync.getBlob?${new URLSearchParams({ did, cid })}`;
}

/** Whether calls carry a credential (a signed-in account or a token). */
export const hasCredentials = () => Boolean(signedIn || token.get());

/** Blob `cid` of `did` as a `Blob`, fetched with this page's credentials. */
export async function fetchBlob(did, cid) {
  const s = signedIn;
  const bearer = s ? s.accessJwt : token.get();
  const res = await fetch(blobUrl(did, cid), { headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
  if (!res.ok) throw new ApiError(res.status, 'Error', `HTTP ${res.status}`);
  return res.blob();
}

/** GET `nsid` with the defined, non-empty `params`. */
export function get(nsid, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const qs = q.toString();
  return call(qs ? `${nsid}?${qs}` : nsid, { method: 'GET' });
}

/** POST `body` as JSON to `nsid`. */
export function post(nsid, body) {
  return call(nsid, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const BASE32_SORTABLE = '234567abcdefghijklmnopqrstuvwxyz';

/** The instant a TID (a rev, or a TID record key) encodes, or null. */
export function tidTime(tid) {
  if (typeof tid !== 'string' || tid.length !== 13) return null;
  let v = 0n;
  for (const c of tid) {
    const i = BASE32_SORTABLE.indexOf(c);
    if (i < 0) return null;
    v = v * 32n + BigInt(i);
  }
  return new Date(Number(v >> 10n) / 1000);
}
