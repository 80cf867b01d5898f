// Writes: create, edit and delete a record with the token the person
// entered. Edits and deletes carry the CID the page showed as `swapRecord`,
// so a stale page never overwrites or deletes a newer version: the server
// answers InvalidSwap and nothing is written.

import * as api from './api.js';
import { h, errorBox } from './dom.js';
import { atUriPath } from './json.js';

/**
 * A JSON editor for a new record (no `rkey`) or for the record `rkey` whose
 * current version is `cid` with `value`. `onDone({path})` after the write.
 */
export function recordEditor({ did, collection, rkey, cid, value, onDone }) {
  const creating = rkey === undefined;
  const text = h('textarea', {
    class: 'editor', rows: 14, spellcheck: 'false', 'aria-label': 'Record (JSON)',
    value: JSON.stringify(value || { $type: collection }, null, 2),
  });
  const keyInput = creating ? h('input', { type: 'text', class: 'rkey', placeholder: 'record key (empty: a new TID)', 'aria-label': 'Record key', spellcheck: 'false' }) : null;
  const validate = h('select', { 'aria-label': 'Validation' },
    h('option', { value: '' }, 'validate when a Lexicon is declared'),
    h('option', { value: 'true' }, 'require validation'),
    h('option', { value: 'false' }, 'do not validate'));
  const message = h('div', { class: 'write-message', role: 'status' });
  const save = h('button', { type: 'submit' }, creating ? 'Create' : 'Save');
  const form = h('form', {
    class: 'edit-form',
    onsubmit: async (e) => {
      e.preventDefault();
      let record;
      try {
        record = JSON.parse(text.value);
      } catch (err) {
        message.replaceChildren(errorBox(err, 'Not valid JSON'));
        return;
      }
      const body = { repo: did, collection, record };
      if (validate.value) body.validate = validate.value === 'true';
      save.disabled = true;
      message.replaceChildren(h('span', { class: 'loading' }, 'Saving…'));
      try {
        let res;
        if (creating) {
          if (keyInput.value.trim()) body.rkey = keyInput.value.trim();
          res = await api.post('com.atproto.repo.createRecord', body);
        } else {
          res = await api.post('com.atproto.repo.putRecord', { ...body, rkey, swapRecord: cid });
        }
        message.replaceChildren(h('span', { class: 'ok' }, `Saved: ${res.cid}`));
        onDone({ path: atUriPath(res.uri), cid: res.cid });
      } catch (err) {
        const hint = err.error === 'InvalidSwap' ? 'The record changed since this page was loaded; reload it before editing' : '';
        message.replaceChildren(errorBox(err, hint || 'Not saved'));
      } finally {
        save.disabled = false;
      }
    },
  },
  h('h2', {}, creating ? 'New record' : 'Edit record'),
  keyInput, text, h('div', { class: 'actions' }, validate, save,
    h('button', { type: 'button', onclick: () => form.remove() }, 'Cancel')),
  message);
  queueMicrotask(() => text.focus());
  return form;
}

/** A button that deletes `rkey` if it is still at `cid`. */
export function deleteButton({ did, collection, rkey, cid, onDone }) {
  const message = h('span', { class: 'write-message', role: 'status' });
  const button = h('button', {
    type: 'button', class: 'danger',
    onclick: async () => {
      if (!window.confirm(`Delete ${collection}/${rkey}?`)) return;
      button.disabled = true;
      try {
        await api.post('com.atproto.repo.deleteRecord', { repo: did, collection, rkey, swapRecord: cid });
        onDone();
      } catch (err) {
        const hint = err.error === 'InvalidSwap' ? 'The record changed since this page was loaded; reload it' : 'Not deleted';
        message.replaceChildren(errorBox(err, hint));
        button.disabled = false;
      }
    },
  }, 'Delete');
  return h('span', { class: 'write-only' }, button, ' ', message);
}
