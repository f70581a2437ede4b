// @ts-check
// Every page's frame: the theme (light, dark, or the system's) and, at phone width, the menu
// that keeps the header to one line.
//
// A classic script in <head>, not a module: it sets `data-theme` on <html> before the first
// paint (no flash of the other theme); the controls are wired once the page is parsed. The
// choice is kept in localStorage; the policy allows no inline script, so this is a file.

(() => {
  const KEY = "orkestrel-theme";
  const CHOICES = ["system", "light", "dark"];
  const root = document.documentElement;

  /** The stored choice ("system" when none, or when storage is refused). */
  function stored() {
    try {
      const value = window.localStorage.getItem(KEY);
      return CHOICES.includes(value) ? value : "system";
    } catch {
      return "system";
    }
  }

  /** @param {string} choice */
  function apply(choice) {
    if (choice === "light" || choice === "dark") root.dataset.theme = choice;
    else delete root.dataset.theme;
  }

  /** The header's theme select: applies and keeps the choice. */
  class ThemeSwitch {
    /** @param {HTMLSelectElement} select */
    constructor(select) {
      select.value = stored();
      /** @type {HTMLElement} */ (select.closest(".theme-choice")).hidden = false;
      select.addEventListener("change", () => {
        apply(select.value);
        try {
          if (select.value === "system") window.localStorage.removeItem(KEY);
          else window.localStorage.setItem(KEY, select.value);
        } catch {
          // Storage refused (a private window's policy): the choice lasts for this page.
        }
      });
      // Another tab chose: follow it.
      window.addEventListener("storage", (event) => {
        if (event.key !== KEY && event.key !== null) return;
        select.value = stored();
        apply(select.value);
      });
    }
  }

  /** The phone-width menu: a button that shows the site's links below the header. */
  class SiteMenu {
    /**
     * @param {HTMLButtonElement} button
     * @param {HTMLElement} nav
     */
    constructor(button, nav) {
      this.button = button;
      this.nav = nav;
      button.hidden = false;
      root.classList.add("has-menu");
      button.addEventListener("click", () => this.show(!nav.classList.contains("is-open")));
      document.addEventListener("keydown", (event) => {
        if (event.key === "Escape" && nav.classList.contains("is-open")) {
          event.preventDefault();
          this.show(false);
          button.focus();
        }
      });
      document.addEventListener("click", (event) => {
        const target = /** @type {Node} */ (event.target);
        if (nav.classList.contains("is-open") && !nav.contains(target) && !button.contains(target)) this.show(false);
      });
    }

    /** @param {boolean} open */
    show(open) {
      this.nav.classList.toggle("is-open", open);
      this.button.setAttribute("aria-expanded", String(open));
    }
  }

  apply(stored());
  document.addEventListener("DOMContentLoaded", () => {
    const select = /** @type {HTMLSelectElement | null} */ (document.getElementById("theme-select"));
    if (select) new ThemeSwitch(select);
    const button = /** @type {HTMLButtonElement | null} */ (document.getElementById("menu-toggle"));
    const nav = document.getElementById("site-nav");
    if (button && nav) new SiteMenu(button, nav);
  });
})();
