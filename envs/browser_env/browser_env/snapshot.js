// Accessibility-tree text of a page, with stable element ids.
// Called as page.evaluate(SNAPSHOT, [rootSelector, excludeSelector, scoreExpression]).
// Every element shown gets a data-oe-id attribute once; it keeps that id for as long as
// it stays in the document, and a new element gets the next free number.
([rootSelector, exclude, scoreExpression]) => {
  const ATTR = "data-oe-id";
  if (window.__oeNextId === undefined) window.__oeNextId = 1;
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "TITLE"]);
  const ROLES = {
    A: "link", BUTTON: "button", SELECT: "combobox", OPTION: "option", TEXTAREA: "textbox",
    H1: "heading", H2: "heading", H3: "heading", H4: "heading", H5: "heading", H6: "heading",
    LI: "listitem", UL: "list", OL: "list", TABLE: "table", TR: "row", TD: "cell", TH: "columnheader",
    IMG: "img", LABEL: "label", FORM: "form", DIALOG: "dialog", CANVAS: "canvas",
  };
  const INPUT_ROLES = {
    checkbox: "checkbox", radio: "radio", button: "button", submit: "button", reset: "button",
    range: "slider", number: "spinbutton", search: "searchbox",
  };
  const squash = (s, n) => {
    s = (s || "").replace(/\s+/g, " ").trim();
    return s.length > n ? s.slice(0, n - 1) + "\u2026" : s;
  };
  const roleOf = (el) => {
    const explicit = el.getAttribute("role");
    if (explicit) return explicit.split(/\s+/)[0];
    if (el.tagName === "INPUT") return INPUT_ROLES[(el.type || "text").toLowerCase()] || "textbox";
    if (el.isContentEditable && el.parentElement && !el.parentElement.isContentEditable) return "textbox";
    return ROLES[el.tagName] || "";
  };
  const directText = (el) => {
    let s = "";
    for (const node of el.childNodes) if (node.nodeType === 3) s += node.textContent + " ";
    return squash(s, 200);
  };
  const nameOf = (el, role) => {
    const aria = el.getAttribute("aria-label");
    if (aria) return squash(aria, 100);
    if (el.labels && el.labels.length) return squash(el.labels[0].innerText, 100);
    if (el.tagName === "IMG") return squash(el.getAttribute("alt") || "", 100);
    if (role === "textbox" || role === "searchbox" || role === "spinbutton" || role === "combobox") {
      return squash(el.getAttribute("placeholder") || el.getAttribute("title") || "", 100);
    }
    if (role === "checkbox" || role === "radio" || role === "slider") return squash(el.getAttribute("title") || "", 100);
    return squash(el.innerText || el.textContent || el.getAttribute("title") || el.getAttribute("value") || "", 100);
  };
  const visible = (el) => {
    if (el.checkVisibility && !el.checkVisibility({ visibilityProperty: true })) return false;
    return true;
  };
  const lines = [];
  const seen = new Set();  // a cloned element arrives with its original's id: renumber it
  const INTERACTIVE = "a,button,input,select,textarea,[role],[onclick],[tabindex],[contenteditable],label";
  const idOf = (el) => {
    let id = el.getAttribute(ATTR);
    if (!id || seen.has(id)) { id = String(window.__oeNextId++); el.setAttribute(ATTR, id); }
    seen.add(id);
    return id;
  };
  const quote = (s) => '"' + s.replace(/\\/g, "\\\\").replace(/"/g, '\\"') + '"';
  const emit = (el, depth, role, name) => {
    let line = "  ".repeat(depth) + "[" + idOf(el) + "] " + role + " " + quote(name);
    if (role === "textbox" || role === "searchbox" || role === "spinbutton" || role === "slider") {
      line += " value=" + quote(squash(el.value !== undefined ? el.value : el.innerText, 200));
    }
    if (el.tagName === "SELECT" && el.selectedIndex >= 0) {
      line += " value=" + quote(squash(el.options[el.selectedIndex].text, 100));
    }
    if ((role === "checkbox" || role === "radio") && el.checked) line += " checked";
    if (role === "option" && el.selected) line += " selected";
    if (el.disabled) line += " disabled";
    if (document.activeElement === el && el !== document.body) line += " focused";
    lines.push(line);
  };
  const walk = (el, depth) => {
    if (SKIP.has(el.tagName) || (exclude && el.matches(exclude)) || !visible(el)) return;
    let role = roleOf(el);
    if (!role && el.onclick) role = "clickable";
    const text = directText(el);
    if (!role && text && getComputedStyle(el).cursor === "pointer") role = "link";
    if (role) {
      emit(el, depth, role, nameOf(el, role));
      if (el.tagName === "SELECT") {  // closed options are not "visible": list them anyway
        for (const option of el.options) emit(option, depth + 1, "option", squash(option.text, 100));
        return;
      }
      // A control's own text is its name: do not repeat it below.
      if (role === "button" || role === "link" || role === "option" || role === "textbox") return;
      for (const child of el.children) walk(child, depth + 1);
    } else if (text) {
      // A run of text: all of it on one line, then only the controls inside it.
      emit(el, depth, "text", squash(el.innerText, 300));
      for (const child of el.children) {
        if (roleOf(child) || child.querySelector(INTERACTIVE) || getComputedStyle(child).cursor === "pointer") {
          walk(child, depth + 1);
        }
      }
    } else {
      for (const child of el.children) walk(child, depth);
    }
  };
  const root = (rootSelector && document.querySelector(rootSelector)) || document.body;
  if (root) walk(root, 0);
  let score = null;
  if (scoreExpression) {
    try { score = (0, eval)(scoreExpression); } catch (e) { score = null; }
  }
  return { text: lines.join("\n"), title: document.title, url: location.href, score: score };
}
