// toolsift playground: plain browser JavaScript over the public API, same origin. The API key
// lives in this page's memory only. Everything shown is set with textContent, never as HTML:
// tool names and descriptions come from whoever pushed the catalog.
'use strict';

const $ = (selector) => document.querySelector(selector);
const state = { catalog: '', detail: 'brief', tool: '' };

function headers(json) {
  const result = {};
  const key = $('#api-key').value.trim();
  if (key) result.authorization = `Bearer ${key}`;
  if (json) result['content-type'] = 'application/json';
  return result;
}

async function api(method, path, body) {
  const response = await fetch(path, { method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const message = parsed?.error ? `${parsed.error.code}: ${parsed.error.message}` : `${response.status} ${text.slice(0, 200)}`;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return parsed;
}

function cell(row, value, className) {
  const td = document.createElement('td');
  td.textContent = value === null || value === undefined ? '–' : String(value);
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function status(selector, message, isError) {
  const element = $(selector);
  element.textContent = message;
  element.classList.toggle('error', Boolean(isError));
}

// ---- views

for (const button of document.querySelectorAll('nav button')) {
  button.addEventListener('click', () => {
    for (const other of document.querySelectorAll('nav button')) other.classList.toggle('active', other === button);
    for (const view of document.querySelectorAll('.view')) view.hidden = view.id !== `view-${button.dataset.view}`;
    if (button.dataset.view === 'upstreams') void loadUpstreams();
  });
}

// ---- catalogs

async function loadCatalogs() {
  const select = $('#catalog');
  try {
    const { catalogs } = await api('GET', '/v1/catalogs');
    select.replaceChildren(
      ...catalogs.map((catalog) => {
        const option = document.createElement('option');
        option.value = catalog.name;
        option.textContent = `${catalog.name} (${catalog.tool_count} tools)`;
        return option;
      }),
    );
    if (catalogs.length === 0) status('#search-status', 'No catalogs yet: push one with PUT /v1/catalogs/{catalog}, or add the sample below.');
    else status('#search-status', '');
    $('#sample-offer').hidden = catalogs.length > 0;
    if (catalogs.some((catalog) => catalog.name === state.catalog)) select.value = state.catalog;
    state.catalog = select.value;
    await showProgress();
  } catch (error) {
    select.replaceChildren();
    status('#search-status', error.status === 401 ? 'This instance needs an API key: type one above.' : error.message, true);
  }
}

async function showProgress() {
  if (!state.catalog) return;
  try {
    const catalog = await api('GET', `/v1/catalogs/${encodeURIComponent(state.catalog)}`);
    const embedding = catalog.embedding;
    $('#catalog-progress').textContent = embedding
      ? `embeddings ${embedding.done}/${embedding.total}${embedding.failed ? `, ${embedding.failed} failed` : ''} (${embedding.model})`
      : 'no embedding model: BM25 only';
  } catch (error) {
    $('#catalog-progress').textContent = error.message;
  }
}

// ---- the sample catalog (ui/sample-catalog.json): something to search in a newcomer's first minute

async function sampleTools() {
  const response = await fetch('sample-catalog.json');
  if (!response.ok) throw new Error(`sample-catalog.json: ${response.status}`);
  return response.json();
}

$('#add-sample').addEventListener('click', async () => {
  status('#search-status', 'Adding the sample catalog…');
  try {
    const tools = await sampleTools();
    await api('PUT', '/v1/catalogs/sample', { tools });
    state.catalog = 'sample';
    $('#query').value = 'what will the weather be in Tokyo tomorrow';
    await loadCatalogs();
    status('#search-status', `Added the catalog "sample" (${tools.length} tools). Search it: a query is filled in, or type your own.`);
  } catch (error) {
    status('#search-status', error.status === 401 ? 'This instance needs an API key: type one above.' : error.message, true);
  }
});

$('#selector-sample').addEventListener('click', async () => {
  try {
    $('#selector-tools').value = JSON.stringify(await sampleTools(), null, 1);
    if (!$('#selector-pattern').value) $('#selector-pattern').value = 'book a meeting with Ana next week';
  } catch (error) {
    status('#selector-status', error.message, true);
  }
});

$('#catalog').addEventListener('change', () => {
  state.catalog = $('#catalog').value;
  void showProgress();
});
$('#api-key').addEventListener('change', () => void loadCatalogs());

// ---- search

$('#search-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  if (!state.catalog) return status('#search-status', 'Pick a catalog first.', true);
  const tags = $('#tags')
    .value.split(',')
    .map((tag) => tag.trim())
    .filter(Boolean);
  const body = { query: $('#query').value, top_k: Number($('#top-k').value) || 10, mode: $('#mode').value, explain: true, ...(tags.length ? { tags } : {}) };
  status('#search-status', 'Searching…');
  try {
    const answer = await api('POST', `/v1/catalogs/${encodeURIComponent(state.catalog)}/search`, body);
    renderResults(answer.results);
    const degraded = answer.degraded ? ` · degraded: ${answer.degraded}` : '';
    status('#search-status', `${answer.results.length} tools in ${answer.took_ms.toFixed(1)} ms${degraded}`);
    void showProgress();
  } catch (error) {
    renderResults([]);
    status('#search-status', error.message, true);
  }
});

function renderResults(results) {
  const rows = results.map((result, index) => {
    const row = document.createElement('tr');
    row.dataset.name = result.name;
    cell(row, index + 1, 'num');
    const name = cell(row, result.name);
    const description = document.createElement('span');
    description.className = 'desc';
    description.textContent = result.description;
    name.appendChild(description);
    cell(row, result.server);
    cell(row, result.score.toFixed(4), 'num');
    const explain = result.explain || {};
    cell(row, explain.bm25 ? explain.bm25.rank : null, 'num bm25-rank');
    cell(row, explain.vector ? explain.vector.rank : null, 'num vector-rank');
    cell(row, explain.server_vote ? explain.server_vote.toFixed(4) : 0, 'num server-vote');
    cell(row, explain.tag_boost ? explain.tag_boost.toFixed(4) : 0, 'num tag-boost');
    cell(row, explain.exact_name ? 'yes' : '', 'exact');
    row.addEventListener('click', () => void showTool(result.name));
    return row;
  });
  $('#results tbody').replaceChildren(...rows);
  $('#tool-detail').hidden = true;
}

async function showTool(name) {
  state.tool = name;
  $('#tool-detail').hidden = false;
  $('#tool-name').textContent = name;
  $('#tool-body').textContent = 'Loading…';
  try {
    const tool = await api('GET', `/v1/catalogs/${encodeURIComponent(state.catalog)}/tools/${encodeURIComponent(name)}?detail=${state.detail}`);
    $('#tool-body').textContent = JSON.stringify(tool, null, 2);
  } catch (error) {
    $('#tool-body').textContent = error.message;
  }
}

for (const button of document.querySelectorAll('[data-detail]')) {
  button.addEventListener('click', () => {
    state.detail = button.dataset.detail;
    for (const other of document.querySelectorAll('[data-detail]')) other.classList.toggle('active', other === button);
    if (state.tool) void showTool(state.tool);
  });
}

// ---- selector

$('#selector-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  let tools;
  try {
    tools = JSON.parse($('#selector-tools').value);
  } catch (error) {
    return status('#selector-status', `The tools are not valid JSON: ${error.message}`, true);
  }
  const top = Number($('#selector-top').value) || 5;
  const pattern = $('#selector-pattern').value;
  const body = $('#selector-shape').value === '0.5.3' ? { query: pattern, max_tools: top, tools } : { pattern, top_k: top, tools };
  status('#selector-status', 'Selecting…');
  try {
    const started = performance.now();
    const answer = await api('POST', '/v1/tool-discovery/search', body);
    $('#selector-names').replaceChildren(
      ...answer.selected_names.map((name) => {
        const item = document.createElement('li');
        item.textContent = name;
        return item;
      }),
    );
    status(
      '#selector-status',
      `${answer.selected_names.length} of ${Array.isArray(tools) ? tools.length : '?'} tools in ${(performance.now() - started).toFixed(0)} ms`,
    );
  } catch (error) {
    $('#selector-names').replaceChildren();
    status('#selector-status', error.message, true);
  }
});

// ---- upstreams

async function loadUpstreams() {
  if (!state.catalog) return status('#upstreams-status', 'Pick a catalog on the search view first.');
  try {
    const answer = await api('GET', `/v1/catalogs/${encodeURIComponent(state.catalog)}/upstreams`);
    const upstreams = answer.upstreams || [];
    $('#upstreams tbody').replaceChildren(
      ...upstreams.map((upstream) => {
        const row = document.createElement('tr');
        cell(row, upstream.name);
        cell(row, upstream.url);
        cell(row, upstream.tool_count);
        cell(row, upstream.last_sync_at ? new Date(upstream.last_sync_at).toLocaleString() : 'never');
        const change = upstream.last_sync;
        cell(row, change ? `+${change.added} ~${change.changed} -${change.removed}` : null);
        cell(row, upstream.last_error, upstream.last_error ? 'error' : '');
        cell(row, upstream.pending, upstream.pending ? 'error' : '');
        return row;
      }),
    );
    status('#upstreams-status', upstreams.length ? '' : `No upstream MCP servers in ${state.catalog}.`);
  } catch (error) {
    $('#upstreams tbody').replaceChildren();
    status('#upstreams-status', error.status === 404 ? 'This instance does not sync upstream MCP servers.' : error.message, error.status !== 404);
  }
}

void loadCatalogs();
