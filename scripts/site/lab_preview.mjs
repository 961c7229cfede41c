// The static preview of a lab, rendered at build time (scripts/site/ropegeo_site.py runs this with
// node): the lab's own ES module draws its default view into a small stand-in for the browser's
// DOM, and the result is printed as HTML. The page shows it, inert, until the live lab replaces it,
// so the lab's place has its height from the first paint and the page never jumps.
//
// Input (stdin, JSON): {labs: [{esm, state, width}]}; output (stdout, JSON): [html or null, ...].

const VOID = new Set(["input", "br", "img", "meta", "link", "hr"]);
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

class ClassList {
  constructor(el) { this.el = el; }
  get list() { return (this.el.getAttribute("class") || "").split(/\s+/).filter(Boolean); }
  contains(c) { return this.list.includes(c); }
  add(...cs) { this.el.setAttribute("class", [...new Set([...this.list, ...cs])].join(" ")); }
  remove(...cs) { this.el.setAttribute("class", this.list.filter((c) => !cs.includes(c)).join(" ")); }
  toggle(c, force) {
    const on = force === undefined ? !this.contains(c) : !!force;
    if (on) this.add(c); else this.remove(c);
    return on;
  }
}

class El {
  constructor(tag) {
    this.localName = tag;
    this.tagName = tag.toUpperCase();
    this.attrs = new Map();
    this.children = [];
    this.parentElement = null;
    this.style = {};
    this.classList = new ClassList(this);
    this.disabled = false;
    this.checked = false;
    this._value = "";
    this.title = "";
  }
  setAttribute(k, v) { this.attrs.set(k, String(v)); if (k === "value") this._value = String(v); }
  getAttribute(k) { return this.attrs.has(k) ? this.attrs.get(k) : null; }
  hasAttribute(k) { return this.attrs.has(k); }
  removeAttribute(k) { this.attrs.delete(k); }
  appendChild(c) { if (c.parentElement) c.parentElement.children = c.parentElement.children.filter((x) => x !== c); c.parentElement = this; this.children.push(c); return c; }
  append(...cs) { cs.forEach((c) => this.appendChild(typeof c === "string" ? new Text(c) : c)); }
  replaceChildren(...cs) { this.children = []; this.append(...cs); }
  remove() { if (this.parentElement) this.parentElement.children = this.parentElement.children.filter((x) => x !== this); }
  set textContent(v) { this.children = [new Text(v)]; }
  get textContent() { return this.children.map((c) => c.textContent).join(""); }
  get value() {
    if (this.localName === "select") { const o = this.options.find((x) => x.selected) || this.options[0]; return o ? o.getAttribute("value") : ""; }
    return this._value;
  }
  set value(v) {
    this._value = String(v);
    if (this.localName === "select") this.options.forEach((o) => { o.selected = o.getAttribute("value") === String(v); });
  }
  set max(v) { this.setAttribute("max", v); }
  get options() { return this.children.filter((c) => c.localName === "option"); }
  get clientWidth() { return this.localName === "div" && this.classList.contains("ropegeo-lab") ? WIDTH : 0; }
  closest(sel) {
    const cls = sel.replace(/^\./, "");
    for (let e = this; e; e = e.parentElement) if (e.classList && e.classList.contains(cls)) return e;
    return null;
  }
  querySelectorAll(sel) {
    const tags = sel.split(",").map((x) => x.trim());
    const out = [];
    const walk = (e) => e.children.forEach((c) => { if (c instanceof El) { if (tags.includes(c.localName)) out.push(c); walk(c); } });
    walk(this);
    return out;
  }
  addEventListener() {}
  removeEventListener() {}
  get outerHTML() {
    const attrs = new Map(this.attrs);
    if (this.localName === "input") {
      if (this.getAttribute("type") !== "checkbox") attrs.set("value", this._value);
      if (this.checked) attrs.set("checked", "");
    }
    if (this.localName === "option" && this.selected) attrs.set("selected", "");
    if (this.disabled) attrs.set("disabled", "");
    if (this.title) attrs.set("title", this.title);
    const style = Object.entries(this.style).map(([k, v]) => `${k.replace(/[A-Z]/g, (m) => "-" + m.toLowerCase())}: ${v}`).join("; ");
    if (style) attrs.set("style", style);
    for (const k of ["id", "for", "aria-live", "data-control"]) attrs.delete(k); // the live lab's, not the preview's
    const a = [...attrs].map(([k, v]) => (v === "" ? ` ${k}` : ` ${k}="${esc(v)}"`)).join("");
    if (VOID.has(this.localName)) return `<${this.localName}${a}>`;
    return `<${this.localName}${a}>${this.children.map((c) => c.outerHTML).join("")}</${this.localName}>`;
  }
}
class Text {
  constructor(t) { this.text = String(t); this.parentElement = null; }
  get textContent() { return this.text; }
  get outerHTML() { return esc(this.text); }
}

let WIDTH = 656;
globalThis.document = {
  createElement: (tag) => new El(tag),
  createElementNS: (_ns, tag) => new El(tag),
  activeElement: null,
};

function model(state) {
  const data = { ...state };
  return { get: (k) => data[k], set: (k, v) => { data[k] = v; }, on() {}, off() {}, save_changes() {}, send() {} };
}

const input = JSON.parse(await new Promise((ok) => { let s = ""; process.stdin.on("data", (c) => (s += c)); process.stdin.on("end", () => ok(s)); }));
const out = [];
for (const lab of input.labs) {
  try {
    WIDTH = lab.width || 656;
    const url = "data:text/javascript;base64," + Buffer.from(lab.esm).toString("base64");
    const mod = await import(url);
    const host = new El("div");
    mod.default.render({ model: model(lab.state), el: host });
    const root = host.children[0];
    root.removeAttribute("data-result"); // the live lab publishes its numbers; the preview has none
    out.push(host.children.map((c) => c.outerHTML).join(""));
  } catch (e) {
    process.stderr.write(`lab preview failed: ${e && e.stack ? e.stack : e}\n`);
    out.push(null);
  }
}
process.stdout.write(JSON.stringify(out));
