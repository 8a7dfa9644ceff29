// openenv web playground: a form built from the action's JSON Schema, driving one
// HTTP session (/sessions) of the env that serves this page. No build step, no CDN.
"use strict";

const ROOT = location.pathname.replace(/web\/?(index\.html)?$/, "");
const $ = (id) => document.getElementById(id);
const state = { schema: null, session: null, step: 0, form: null, options: null };

// --- HTTP -----------------------------------------------------------------------

// A server started with --auth-token wants "Authorization: Bearer <token>" on every
// call: the page asks for the token once and keeps it in this tab's sessionStorage
// (never in a cookie, so no other site's request carries it).
const TOKEN_KEY = "openenv-token";

function authHeaders() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { authorization: `Bearer ${token}` } : {};
}

async function api(method, path, body) {
  const init = { method, headers: authHeaders() };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(ROOT + path, init);
  const data = await resp.json().catch(() => null);
  if (!resp.ok) {
    const err = (data && data.error) || {};
    const e = new Error(`${err.code || "HTTP " + resp.status}: ${err.message || JSON.stringify(data)}`);
    e.code = err.code;
    throw e;
  }
  return data;
}

async function ensureSession() {
  if (!state.session) state.session = (await api("POST", "sessions")).session_id;
  return state.session;
}

// Calls on the session; a reaped session (idle timeout) is replaced once.
async function onSession(method, suffix, body) {
  await ensureSession();
  try {
    return await api(method, `sessions/${state.session}/${suffix}`, body);
  } catch (e) {
    if (e.code !== "SESSION_NOT_FOUND" && e.code !== "SESSION_CLOSED") throw e;
    state.session = null;
    await ensureSession();
    if (suffix !== "reset") throw new Error("the session had expired: a new one was opened, reset it");
    return await api(method, `sessions/${state.session}/${suffix}`, body);
  }
}

// --- the form, from JSON Schema ------------------------------------------------------

// ``root`` is the schema whose $defs a $ref points into (the action's, the options').
function resolve(node, root) {
  let guard = 0;
  while (node && node.$ref && guard++ < 20) {
    let target = root;
    for (const part of node.$ref.replace(/^#\//, "").split("/")) target = target[part];
    const { $ref, ...rest } = node;
    node = { ...target, ...rest };
  }
  return node || {};
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") e.textContent = v;
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

function labelled(name, node, required, input) {
  const title = `${name}${required ? " *" : ""}`;
  const hint = node.description ? el("span", { class: "hint", text: node.description }) : null;
  return el("label", {}, title, input, hint);
}

function tagOf(branch, root) {
  for (const [key, prop] of Object.entries(branch.properties || {})) {
    const p = resolve(prop, root);
    if (p.const !== undefined) return { key, value: p.const };
    if (p.enum && p.enum.length === 1) return { key, value: p.enum[0] };
  }
  return null;
}

function unionField(name, branches, required, root) {
  const resolved = branches.map((b) => resolve(b, root));
  const box = el("fieldset", { "data-field": name }, el("legend", { text: `${name} (one of)` }));
  const select = el("select", { "data-union": name });
  resolved.forEach((b, i) => {
    const tag = tagOf(b, root);
    select.append(el("option", { value: String(i), text: (tag && String(tag.value)) || b.title || `option ${i + 1}` }));
  });
  const holder = el("div");
  let current = null;
  const render = () => {
    holder.replaceChildren();
    current = build(resolved[Number(select.value)], null, true, root);
    holder.append(current.el);
  };
  select.addEventListener("change", () => { render(); syncJson(); });
  box.append(select, holder);
  render();
  return { el: box, get: () => current.get() };
}

function build(node, name, required, root) {
  node = resolve(node, root);
  if (node.const !== undefined) return { el: null, get: () => node.const };
  const branches = node.oneOf || node.anyOf;
  if (branches) {
    const real = branches.filter((b) => resolve(b, root).type !== "null");
    if (real.length === 1) {
      const only = { ...resolve(real[0], root), description: node.description, default: node.default };
      return build(only, name, false, root);
    }
    return unionField(name || "action", real, required, root);
  }
  if (node.type === "object" && node.properties) return objectField(node, name, root);
  return scalarField(node, name, required);
}

function objectField(node, name, root) {
  const req = new Set(node.required || []);
  const children = [];
  const box = name ? el("fieldset", { "data-field": name }, el("legend", { text: name })) : el("div");
  for (const [key, prop] of Object.entries(node.properties)) {
    if (key === "metadata") continue; // the base Action's free-form dict; use the JSON box
    const child = build(prop, key, req.has(key), root);
    children.push([key, child]);
    if (child.el) box.append(child.el);
  }
  const get = () => {
    const out = {};
    for (const [key, child] of children) {
      const v = child.get();
      if (v !== undefined) out[key] = v;
    }
    return out;
  };
  return { el: box, get };
}

function scalarField(node, name, required) {
  const type = Array.isArray(node.type) ? node.type.find((t) => t !== "null") : node.type;
  const def = node.default;
  let input;
  let get;
  if (node.enum) {
    input = el("select", { name });
    if (!required) input.append(el("option", { value: "", text: "(default)" }));
    node.enum.forEach((v, i) => input.append(el("option", { value: String(i), text: String(v) })));
    if (def !== undefined) input.value = String(node.enum.indexOf(def));
    get = () => (input.value === "" ? undefined : node.enum[Number(input.value)]);
  } else if (type === "boolean") {
    input = el("input", { type: "checkbox", name });
    input.checked = def === true;
    get = () => input.checked;
  } else if (type === "integer" || type === "number") {
    input = el("input", { type: "number", name, min: node.minimum, max: node.maximum, step: type === "integer" ? 1 : "any" });
    if (def !== undefined && def !== null) input.value = def;
    else if (required) input.value = node.minimum ?? (node.maximum !== undefined ? Math.min(0, node.maximum) : 0);
    get = () => (input.value === "" ? undefined : Number(input.value));
  } else if (type === "string") {
    const long = node.maxLength === undefined || node.maxLength > 200;
    input = long ? el("textarea", { name, rows: 2 }) : el("input", { type: "text", name, maxlength: node.maxLength });
    if (typeof def === "string") input.value = def;
    get = () => (input.value === "" && !required ? undefined : input.value);
  } else {
    input = el("textarea", { name, rows: 2, placeholder: "JSON" });
    if (def !== undefined) input.value = JSON.stringify(def);
    get = () => (input.value.trim() === "" ? undefined : JSON.parse(input.value));
  }
  input.addEventListener("input", syncJson);
  input.addEventListener("change", syncJson);
  return { el: labelled(name, node, required, input), get };
}

function syncJson() {
  if ($("use-raw").checked) return;
  try {
    $("action-json").value = JSON.stringify(state.form.get(), null, 1);
  } catch (e) {
    $("action-json").value = `// ${e.message}`;
  }
}

// --- showing results ----------------------------------------------------------

const IMAGE_PREFIXES = { iVBORw0KGgo: "png", "/9j/": "jpeg", R0lGOD: "gif", UklGR: "webp" };

function imageSrc(value) {
  if (typeof value !== "string" || value.length < 64) return null;
  if (value.startsWith("data:image/")) return value;
  for (const [prefix, kind] of Object.entries(IMAGE_PREFIXES)) {
    if (value.startsWith(prefix)) return `data:image/${kind};base64,${value}`;
  }
  return null;
}

// A copy of the observation with images cut out, and the images found.
function splitImages(value, path, images) {
  const src = imageSrc(value);
  if (src) {
    images.push({ path, src });
    return `<image ${value.length} chars, shown above>`;
  }
  if (Array.isArray(value)) return value.map((v, i) => splitImages(v, `${path}[${i}]`, images));
  if (value && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = splitImages(v, path ? `${path}.${k}` : k, images);
    return out;
  }
  return value;
}

function showBreakdown(observation) {
  const box = $("breakdown");
  box.replaceChildren();
  const breakdown = observation && observation.metadata && observation.metadata.reward_breakdown;
  if (!breakdown || typeof breakdown !== "object") return;
  const table = el("table", { id: "breakdown-table" }, el("tr", {}, el("th", { text: "reward part" }), el("th", { text: "value" })));
  for (const [k, v] of Object.entries(breakdown)) {
    table.append(el("tr", {}, el("td", { text: k }), el("td", { text: typeof v === "number" ? String(v) : JSON.stringify(v) })));
  }
  box.append(el("h2", { text: "Reward breakdown" }), table);
}

function formatReward(r) {
  if (r === null || r === undefined) return "none";
  return typeof r === "number" && !Number.isInteger(r) ? String(Number(r.toPrecision(8))) : String(r);
}

function showObservation(data) {
  const images = [];
  const shown = splitImages(data.observation, "", images);
  $("observation").textContent = JSON.stringify(shown, null, 2);
  $("reward").textContent = formatReward(data.reward);
  $("done").textContent = String(Boolean(data.done));
  $("truncated").textContent = String(Boolean(data.truncated));
  $("step-count").textContent = String(state.step);
  showBreakdown(data.observation);
  $("images").replaceChildren(...images.map((im) => el("img", { src: im.src, alt: im.path, title: im.path })));
  return shown;
}

function addHistory(action, data, shown) {
  const brief = JSON.stringify(shown);
  const row = el(
    "tr", {},
    el("td", { text: String(state.step) }),
    el("td", {}, el("code", { text: action === null ? "reset" : JSON.stringify(action) })),
    el("td", { text: formatReward(data.reward) }),
    el("td", { text: data.done ? (data.truncated ? "truncated" : "terminated") : "" }),
    el("td", {}, el("code", { text: brief.length > 240 ? brief.slice(0, 240) + "…" : brief })),
  );
  $("history").tBodies[0].append(row);
}

function fail(e) {
  $("error").textContent = e.message || String(e);
}

// --- wiring -------------------------------------------------------------------

async function onReset(ev) {
  ev.preventDefault();
  $("error").textContent = "";
  try {
    const raw = $("reset-options").value.trim();
    const body = { ...(state.options ? state.options.get() : {}), ...(raw ? JSON.parse(raw) : {}) };
    const seed = $("reset-seed").value;
    if (seed !== "") body.seed = Number(seed);
    const episode = $("reset-episode").value.trim();
    if (episode) body.episode_id = episode;
    const data = await onSession("POST", "reset", body);
    state.step = 0;
    $("history").tBodies[0].replaceChildren();
    addHistory(null, data, showObservation(data));
    $("step-button").disabled = false;
    $("state-button").disabled = false;
  } catch (e) {
    fail(e);
  }
}

async function onStep(ev) {
  ev.preventDefault();
  $("error").textContent = "";
  try {
    const action = $("use-raw").checked ? JSON.parse($("action-json").value) : state.form.get();
    const data = await onSession("POST", "step", { action });
    state.step += 1;
    addHistory(action, data, showObservation(data));
  } catch (e) {
    fail(e);
  }
}

async function onState() {
  $("error").textContent = "";
  try {
    $("state").textContent = JSON.stringify(await onSession("GET", "state"), null, 2);
  } catch (e) {
    fail(e);
  }
}

async function load() {
  try {
    const [meta, schema] = await Promise.all([api("GET", "metadata"), api("GET", "schema")]);
    $("token-form").hidden = true;
    $("error").textContent = "";
    state.schema = schema;
    document.title = `${meta.name} · openenv playground`;
    $("env-name").textContent = meta.name;
    $("env-description").textContent = meta.description || "";
    state.form = build(schema.action, null, true, schema.action);
    const options = schema.reset_options;
    if (options && options.properties && Object.keys(options.properties).length) {
      state.options = build(options, null, true, options);
      $("reset-fields").replaceChildren(state.options.el);
    }
    $("action-fields").replaceChildren(state.form.el || el("p", { class: "hint", text: "this action has no fields" }));
    syncJson();
    $("status").textContent = "ready";
    $("status").className = "status ok";
  } catch (e) {
    const needsToken = e.code === "UNAUTHORIZED";
    $("status").textContent = needsToken ? "token needed" : "error";
    $("status").className = "status bad";
    $("token-form").hidden = !needsToken;
    if (needsToken) $("token").focus();
    fail(e);
  }
}

function onToken(ev) {
  ev.preventDefault();
  const token = $("token").value.trim();
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
  $("token").value = "";
  $("error").textContent = "";
  $("status").textContent = "loading…";
  $("status").className = "status";
  load();
}

async function main() {
  $("token-form").addEventListener("submit", onToken);
  await load();
  $("reset-form").addEventListener("submit", onReset);
  $("step-form").addEventListener("submit", onStep);
  $("state-button").addEventListener("click", onState);
  window.addEventListener("pagehide", () => {
    const init = { method: "DELETE", keepalive: true, headers: authHeaders() };
    if (state.session) fetch(`${ROOT}sessions/${state.session}`, init);
  });
}

main();
