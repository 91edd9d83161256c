// Documents: upload files (with an optional ACL group) as an ingest job with a progress
// bar; list and delete the tenant's documents.
import { clear, h } from './dom.js';

export async function documentsPanel(api) {
  const list = h('ul', { class: 'doc-list' });
  const files = h('input', { type: 'file', multiple: true, accept: '.md,.markdown,.txt,.html,.htm,.pdf', 'aria-label': 'files' });
  const acl = h('input', { type: 'text', placeholder: 'ACL group (optional)', 'aria-label': 'ACL group' });
  const bar = h('progress', { max: '1', value: '0', hidden: true });
  const note = h('span', { class: 'note', 'aria-live': 'polite' });

  const refresh = async () => {
    const docs = await api.get('/documents');
    clear(list);
    if (!docs.length) list.append(h('li', { class: 'dim', text: 'No documents yet.' }));
    for (const d of docs) {
      list.append(h('li', { class: 'doc', 'data-doc-id': d.doc_id },
        h('div', { class: 'doc-title', text: d.title || d.source }),
        h('div', { class: 'dim small', text: `${d.source} · ${d.chunks} chunks · ${d.acl.join(', ')} · ${d.uploaded_by} · ${new Date(d.updated_at).toLocaleString()}` }),
        h('button', {
          type: 'button', class: 'btn danger small', text: 'Delete',
          on: {
            click: async () => {
              try {
                await api.del(`/documents/${encodeURIComponent(d.doc_id)}`);
              } catch (e) {
                note.textContent = `delete failed: ${e.message}`;
              }
              await refresh();
            },
          },
        })));
    }
  };

  const follow = async (jobId) => {
    bar.hidden = false;
    for (;;) {
      const job = await api.get(`/documents/jobs/${encodeURIComponent(jobId)}`);
      bar.max = Math.max(job.total, 1);
      bar.value = job.done;
      note.textContent = job.status === 'error' ? `ingest failed: ${job.error}` : `${job.done} of ${job.total} batches stored`;
      if (job.status !== 'running') {
        if (job.status === 'done') note.textContent = 'ingested';
        return job;
      }
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
  };

  const upload = h('button', {
    type: 'button', class: 'btn primary', text: 'Upload',
    on: {
      click: async () => {
        if (!files.files.length) {
          note.textContent = 'choose files first';
          return;
        }
        const form = new FormData();
        for (const f of files.files) form.append('files', f, f.name);
        if (acl.value.trim()) form.append('acl', acl.value.trim());
        upload.disabled = true;
        note.textContent = 'uploading…';
        try {
          const accepted = await api.request('POST', '/documents', { form });
          await refresh();
          await follow(accepted.job_id);
          files.value = '';
        } catch (e) {
          note.textContent = `upload failed: ${e.message}`;
        } finally {
          upload.disabled = false;
          await refresh();
        }
      },
    },
  });
  await refresh();
  return h('div', { class: 'panel-body' },
    h('div', { class: 'form upload' }, files, acl, upload),
    h('div', { class: 'progress-row' }, bar, note),
    list);
}
