// @ts-check
/**
 * Django's two-box filters (filter_horizontal) label their search icon, a <span>, with
 * aria-label: ARIA forbids a label on an element without a role (axe: aria-prohibited-attr,
 * serious). The icon is an image with a name, so it gets that role.
 *
 * The filters are drawn on window load (SelectFilter2.js); this runs after every load handler.
 */

class FilterIcons {
  static label() {
    for (const icon of document.querySelectorAll("span.search-label-icon[aria-label]:not([role])")) {
      icon.setAttribute("role", "img");
    }
  }
}

window.addEventListener("load", () => setTimeout(FilterIcons.label, 0));
