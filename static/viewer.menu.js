// The context menu of a frame, a graph node or a top row: one element, reused.

let menu = null;
let closeHandlers = null;

function closeMenu() {
  if (!menu || menu.hidden) return;
  menu.hidden = true;
  for (const [target, type, fn, capture] of closeHandlers) target.removeEventListener(type, fn, capture);
  closeHandlers = null;
}

/** Opens the menu at page point (x, y) of a viewport, titled `title` (a function name, shown as
 * text), with items [{label, key, action}] (an item null draws a separator). */
export function openMenu(x, y, title, items) {
  closeMenu();
  menu = menu || document.getElementById("ctx-menu");
  const head = document.createElement("div");
  head.className = "ctx-title mono";
  head.textContent = title;
  const parts = [head];
  for (const item of items) {
    if (!item) {
      parts.push(Object.assign(document.createElement("hr"), { className: "ctx-sep" }));
      continue;
    }
    const b = document.createElement("button");
    b.type = "button";
    b.setAttribute("role", "menuitem");
    b.dataset.action = item.id;
    const label = document.createElement("span");
    label.textContent = item.label;
    b.append(label);
    if (item.key) {
      const key = document.createElement("kbd");
      key.textContent = item.key;
      b.append(key);
    }
    b.addEventListener("click", () => {
      closeMenu();
      item.action();
    });
    parts.push(b);
  }
  menu.replaceChildren(...parts);
  menu.hidden = false;
  const r = menu.getBoundingClientRect();
  menu.style.left = Math.max(4, Math.min(x, window.innerWidth - r.width - 4)) + "px";
  menu.style.top = Math.max(4, Math.min(y, window.innerHeight - r.height - 4)) + "px";
  const outside = (e) => {
    if (!menu.contains(e.target)) closeMenu();
  };
  const key = (e) => {
    // The menu has the keyboard while it is open: Esc closes it, arrows move between items.
    if (e.key === "Escape") {
      e.stopPropagation();
      closeMenu();
    } else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      e.stopPropagation();
      const buttons = [...menu.querySelectorAll("button")];
      const at = buttons.indexOf(document.activeElement);
      const step = e.key === "ArrowDown" ? 1 : -1;
      buttons[(at + step + buttons.length) % buttons.length].focus();
    } else if (menu.contains(e.target) && e.key !== "Enter" && e.key !== " " && e.key !== "Tab") {
      e.stopPropagation(); // the page's own keys (f, i, …) wait until the menu is closed
    }
  };
  closeHandlers = [
    [document, "mousedown", outside, true],
    [document, "keydown", key, true],
    [window, "scroll", closeMenu, true],
    [window, "blur", closeMenu, false],
  ];
  for (const [target, type, fn, capture] of closeHandlers) target.addEventListener(type, fn, capture);
  menu.querySelector("button").focus();
}
