// The XRPC API, as the only way this interface reads or writes. A token
// entered by the person is kept in sessionStorage (gone with the tab) and
// sent as the bearer header on every call, reads included, so a server
// with --private-reads works too.

const TOKEN_KEY = 'datarepo.token';

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) || '',
  set(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  },
};

/** An error answer of the API: `error` is the XRPC error name. */
export class ApiError extends Error {
  constructor(status, error, message) {
    super(message);
    this.status = status;
    this.error = error;
  }
}

async function call(path, init) {
  const headers = { accept: 'application/json', ...(init.headers || {}) };
  const t = token.get();
  if (t) headers.authorization = `Bearer ${t}`;
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
