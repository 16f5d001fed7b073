// kv-efficiency records: sorting of the tables and filtering of the records table. No dependencies.
"use strict";

(function () {
  // Sorting, for every table whose headers are sortable: numeric columns compare data-sort as
  // numbers; empty cells always go last.
  function sortBy(body, index, numeric, direction) {
    const rows = Array.from(body.rows);
    const key = (row) => {
      const cell = row.cells[index];
      const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
      if (raw === "") {
        return null;
      }
      return numeric ? Number(raw) : raw.toLowerCase();
    };
    rows.sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      if (ka === null && kb === null) {
        return 0;
      }
      if (ka === null) {
        return 1;
      }
      if (kb === null) {
        return -1;
      }
      if (ka < kb) {
        return -direction;
      }
      if (ka > kb) {
        return direction;
      }
      return 0;
    });
    rows.forEach((row) => body.appendChild(row));
  }

  document.querySelectorAll("table").forEach((sortable) => {
    if (!sortable.tHead || !sortable.querySelector("th.sortable")) {
      return;
    }
    const body = sortable.tBodies[0];
    const headers = Array.from(sortable.tHead.rows[0].cells);
    headers.forEach((th, index) => {
      if (!th.classList.contains("sortable")) {
        return;
      }
      const activate = () => {
        const ascending = th.getAttribute("aria-sort") !== "ascending";
        headers.forEach((other) => other.removeAttribute("aria-sort"));
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        sortBy(body, index, th.dataset.type === "num", ascending ? 1 : -1);
      };
      th.addEventListener("click", activate);
      th.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          activate();
        }
      });
    });
  });

  const table = document.getElementById("records");
  if (!table) {
    return;
  }
  const body = table.tBodies[0];
  const form = document.getElementById("filters");
  const count = document.getElementById("visible-count");

  // Filtering: every control narrows the rows; a context bound hides rows with no context.
  function value(name) {
    const control = form.elements.namedItem(name);
    return control ? control.value.trim() : "";
  }

  function applyFilters() {
    const text = value("q").toLowerCase();
    const technique = value("technique");
    const model = value("model");
    const hardware = value("hardware");
    const engine = value("engine");
    const minText = value("min_context");
    const maxText = value("max_context");
    let visible = 0;
    Array.from(body.rows).forEach((row) => {
      const data = row.dataset;
      const context = data.context === "" ? null : Number(data.context);
      let show = true;
      if (text && !row.textContent.toLowerCase().includes(text)) {
        show = false;
      }
      if (technique && !data.techniques.split(" ").includes(technique)) {
        show = false;
      }
      if (model && data.model !== model) {
        show = false;
      }
      // a record on an h100-sxm matches both "h100-sxm" and its family "h100"
      if (hardware && !data.hardware.split(" ").includes(hardware)) {
        show = false;
      }
      if (engine && data.engine !== engine) {
        show = false;
      }
      if (minText !== "" && (context === null || context < Number(minText))) {
        show = false;
      }
      if (maxText !== "" && (context === null || context > Number(maxText))) {
        show = false;
      }
      row.hidden = !show;
      if (show) {
        visible += 1;
      }
    });
    count.textContent = String(visible);
  }

  form.addEventListener("input", applyFilters);
  form.addEventListener("change", applyFilters);
  form.addEventListener("reset", () => window.setTimeout(applyFilters, 0));
  form.addEventListener("submit", (event) => event.preventDefault());
  applyFilters();
})();

(function () {
  // An accelerator page's ranking, filtered by the records' model and accelerator count, so a
  // reader with one card does not read a 16-GPU cluster's gain first.
  const model = document.getElementById("rank-model");
  const count = document.getElementById("rank-count");
  if (!model || !count) {
    return;
  }
  const shown = document.getElementById("rank-shown");
  function applyRankFilters() {
    let visible = 0;
    let total = 0;
    document.querySelectorAll("table.by-technique").forEach((table) => {
      let here = 0;
      table.querySelectorAll("tbody tr").forEach((row) => {
        const show =
          (model.value === "" || row.dataset.model === model.value) &&
          (count.value === "" || row.dataset.count === count.value);
        row.hidden = !show;
        here += show ? 1 : 0;
        total += 1;
      });
      visible += here;
      // a technique with no comparison left is hidden, heading and all
      const wrap = table.closest(".table-wrap");
      wrap.hidden = here === 0;
      wrap.previousElementSibling.hidden = here === 0;
    });
    if (shown) {
      shown.textContent = visible + " of " + total + " comparisons shown";
    }
  }
  model.addEventListener("change", applyRankFilters);
  count.addEventListener("change", applyRankFilters);
  applyRankFilters();
})();
