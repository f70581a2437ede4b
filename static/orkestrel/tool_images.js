// @ts-check
// Images a tool call returned (an MCP tool's image content), drawn on its tool card. The server
// passes only raster types it checked (png, jpeg, gif, webp; base64), and the page's CSP allows
// `data:` images and nothing that runs: an <img> from a data URL cannot run script. Anything
// else in the list is left out here too.

const SHOWN = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Whether a tool's `display` is a list of images (`{kind: "images", images: [{mime, data}]}`). */
export function isImages(display) {
  return Boolean(display) && display.kind === "images" && Array.isArray(display.images);
}

/** The images of `display` as a figure group for the tool card (null when none can be shown). */
export function renderToolImages(display) {
  const shown = display.images.filter(
    (image) => image && SHOWN.has(image.mime) && typeof image.data === "string" && BASE64.test(image.data),
  );
  if (!shown.length) return null;
  const group = document.createElement("div");
  group.className = "tool-images";
  group.dataset.testid = "tool-images";
  shown.forEach((image, index) => {
    const img = document.createElement("img");
    img.className = "tool-image";
    img.src = `data:${image.mime};base64,${image.data}`;
    img.alt = `Image ${index + 1} of ${shown.length} the tool returned`;
    img.decoding = "async";
    img.loading = "lazy";
    group.append(img);
  });
  return group;
}
