// The websocket to /api/v1/ws: authenticates with the session token in the first frame,
// re-connects with back-off when the connection drops, and then re-joins every run it
// follows with the last event id it saw, so the server sends exactly what was missed.
import { compareIds } from './dom.js';

export class Socket {
  constructor({ token, onFrame, onState, onUnauthorized }) {
    this.token = token;
    this.onFrame = onFrame;
    this.onState = onState || (() => {});
    this.onUnauthorized = onUnauthorized || (() => {});
    this.following = new Map(); // run id -> last event id
    this.queue = [];
    this.ws = null;
    this.ready = false;
    this.closed = false;
    this.delay = 250;
    this.seq = 0;
  }

  connect() {
    if (this.closed) return;
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${scheme}//${location.host}/api/v1/ws`);
    this.ws = ws;
    this.ready = false;
    this.onState('connecting');
    ws.addEventListener('open', () => ws.send(JSON.stringify({ type: 'auth', api_key: this.token() })));
    ws.addEventListener('message', (msg) => this.receive(msg.data));
    ws.addEventListener('close', (ev) => {
      if (this.ws !== ws) return;
      this.ready = false;
      if (ev.code === 4401) {
        this.closed = true;
        this.onUnauthorized();
        return;
      }
      this.onState('offline');
      setTimeout(() => this.connect(), this.delay);
      this.delay = Math.min(this.delay * 2, 5000);
    });
  }

  receive(data) {
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      return;
    }
    if (frame.type === 'ready') {
      this.ready = true;
      this.delay = 250;
      this.onState('online');
      for (const [runId, last] of this.following) this.sendNow({ type: 'join', run_id: runId, last_event_id: last });
      const queued = this.queue.splice(0);
      for (const f of queued) this.sendNow(f);
      return;
    }
    if (frame.run_id && frame.id) {
      const last = this.following.get(frame.run_id);
      if (last !== undefined && compareIds(frame.id, last) > 0) this.following.set(frame.run_id, frame.id);
      if (frame.type === 'done') this.following.delete(frame.run_id);
    }
    this.onFrame(frame);
  }

  /** Send a frame now, or when the connection is ready again; returns its request id. */
  send(frame) {
    const requestId = `r${++this.seq}`;
    const full = { ...frame, request_id: requestId };
    if (this.ready) this.sendNow(full);
    else this.queue.push(full);
    return requestId;
  }

  sendNow(frame) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
    else this.queue.push(frame);
  }

  /** Follow a run from `lastId` on (now, and again after every reconnect). */
  follow(runId, lastId = '0-0', join = true) {
    this.following.set(runId, lastId);
    // Not ready yet: the `ready` handler joins every followed run with its latest id.
    if (join && this.ready) this.sendNow({ type: 'join', run_id: runId, last_event_id: lastId });
  }

  forget(runId) { this.following.delete(runId); }

  close() {
    this.closed = true;
    if (this.ws) this.ws.close(1000);
  }
}
