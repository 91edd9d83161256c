// REST calls under /api/v1 with the session token as the bearer; errors keep the API's
// {code, message, hint}.

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || `http_${status}`;
    this.hint = error.hint || '';
  }
}

export class Api {
  constructor(token, onUnauthorized) {
    this.token = token;
    this.onUnauthorized = onUnauthorized || (() => {});
  }

  async request(method, path, { json, form, bearer } = {}) {
    const headers = {};
    const auth = bearer ?? this.token();
    if (auth) headers.Authorization = `Bearer ${auth}`;
    let body;
    if (json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(json);
    } else if (form) body = form;
    const res = await fetch(`/api/v1${path}`, { method, headers, body, credentials: 'omit', cache: 'no-store' });
    const text = res.status === 204 ? '' : await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!res.ok) {
      if (res.status === 401 && bearer === undefined) this.onUnauthorized();
      throw new ApiError(res.status, data);
    }
    return data;
  }

  get(path) { return this.request('GET', path); }
  post(path, json) { return this.request('POST', path, { json }); }
  put(path, json) { return this.request('PUT', path, { json }); }
  patch(path, json) { return this.request('PATCH', path, { json }); }
  del(path) { return this.request('DELETE', path); }
}
