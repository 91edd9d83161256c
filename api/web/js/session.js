// Signing in: a one-time login token from the address (`#login=…`, printed by
// `agentbus up`) or a pasted API key is exchanged for a short-lived session token, kept
// in sessionStorage (this tab only). The login token is removed from the address bar
// at once; the API key is never stored.
import { ApiError } from './api.js';

const KEY = 'agentbus.session';

export function sessionToken() {
  return sessionStorage.getItem(KEY);
}

export function forgetSession() {
  sessionStorage.removeItem(KEY);
}

/** Take a login token out of the address bar (so no kept URL or history entry has it). */
export function takeLoginToken() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get('login');
  if (!token) return null;
  params.delete('login');
  const rest = params.toString();
  history.replaceState(null, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
  return token;
}

async function exchange(api, options) {
  const session = await api.request('POST', '/sessions', options);
  sessionStorage.setItem(KEY, session.token);
  return session;
}

/** Redeem a login token for a session. */
export function signInWithLoginToken(api, loginToken) {
  return exchange(api, { json: { login_token: loginToken }, bearer: '' });
}

/** Exchange an API key for a session (the key itself is not kept). */
export function signInWithKey(api, apiKey) {
  return exchange(api, { json: {}, bearer: apiKey.trim() });
}

/** Who the stored session acts for, or null when there is none (or it expired). */
export async function currentSession(api) {
  if (!sessionToken()) return null;
  try {
    return await api.request('GET', '/sessions/current', { bearer: sessionToken() });
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      forgetSession();
      return null;
    }
    throw e;
  }
}

export async function signOut(api) {
  try {
    await api.del('/sessions/current');
  } finally {
    forgetSession();
  }
}
