// The per-question table of report.html: filters, and a detail row per question. Every text is
// written with textContent (never as HTML): memories and answers are untrusted input.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  var LIMIT = 500;
  var body = document.querySelector("#q tbody");
  var shown = document.getElementById("shown");
  var filters = document.getElementById("filters");
  var rows = data.rows;

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function distinct(index) {
    var seen = {}, out = [];
    rows.forEach(function (r) {
      var v = r[index];
      if (!seen.hasOwnProperty(v)) { seen[v] = true; out.push(v); }
    });
    return out;
  }
  function select(name, values, labels) {
    var label = el("label", name + " ");
    var s = el("select");
    s.appendChild(el("option", "any")).value = "";
    values.forEach(function (v, i) {
      var o = el("option", labels ? labels[i] : v);
      o.value = String(v);
      s.appendChild(o);
    });
    s.addEventListener("change", draw);
    label.appendChild(s);
    filters.appendChild(label);
    return s;
  }
  var series = distinct(2);
  var fDataset = select("dataset", distinct(0));
  var fSystem = select("system", series, series.map(function (i) {
    return i < 0 ? "?" : data.series[i];
  }));
  var fSlice = select("slice", distinct(3));
  var fVerdict = select("verdict", distinct(4));

  function fmt(v) {
    return v === null || v === undefined ? "null" : (typeof v === "number" ? v.toFixed(3) : v);
  }
  function kv(parent, obj) {
    Object.keys(obj).forEach(function (k) {
      var v = obj[k];
      if (v === null || v === undefined) return;
      var line = el("div");
      line.appendChild(el("b", k + ": "));
      line.appendChild(el("span", typeof v === "object" ? JSON.stringify(v) : v));
      parent.appendChild(line);
    });
  }
  function detail(r) {
    var d = r[6];
    var cell = el("td");
    cell.colSpan = 6;
    cell.appendChild(el("h4", "question " + r[1] + " (" + r[0] + "), run " + d.run));
    kv(cell, {"verdict read from": d.figure, repeat: d.repeat || null, outcome: d.outcome, reason: d.outcome_reason, "memories returned": d.returned,
              "characters returned": d.chars, "latency ms": d.latency_ms,
              "answer (observation)": d.answer});
    cell.appendChild(el("h4", "what came back"));
    (d.memories || []).forEach(function (m, i) {
      var box = el("div", null, "mem");
      box.appendChild(el("b", (i + 1) + ". " + m[0] + " "));
      box.appendChild(el("span", data.texts[m[1]]));
      cell.appendChild(box);
    });
    if (!d.memories) cell.appendChild(el("p", "no observation recorded"));
    if (d.more) cell.appendChild(el("p", d.more + " more memories: see observations.jsonl"));
    (d.answers || []).forEach(function (a) {
      cell.appendChild(el("h4", "answer"));
      kv(cell, a);
    });
    (d.judgements || []).forEach(function (j) {
      cell.appendChild(el("h4", "judgement"));
      kv(cell, j);
    });
    cell.appendChild(el("h4", "metrics of this question"));
    kv(cell, d.metrics);
    if (Object.keys(d.null_reasons).length) {
      cell.appendChild(el("h4", "why null"));
      var why = {};
      Object.keys(d.null_reasons).forEach(function (k) {
        why[k] = data.reasons[d.null_reasons[k]];
      });
      kv(cell, why);
    }
    var tr = el("tr", null, "detail");
    tr.appendChild(cell);
    return tr;
  }
  function draw() {
    while (body.firstChild) body.removeChild(body.firstChild);
    var match = rows.filter(function (r) {
      return (!fDataset.value || r[0] === fDataset.value) &&
        (!fSystem.value || String(r[2]) === fSystem.value) &&
        (!fSlice.value || r[3] === fSlice.value) &&
        (!fVerdict.value || r[4] === fVerdict.value);
    });
    match.slice(0, LIMIT).forEach(function (r) {
      var tr = el("tr", null, "row");
      [r[0], r[1], r[2] < 0 ? "?" : data.series[r[2]], r[3]].forEach(function (v) {
        tr.appendChild(el("td", v));
      });
      tr.appendChild(el("td", r[4], r[4]));
      tr.appendChild(el("td", fmt(r[5])));
      var open = null;
      tr.addEventListener("click", function () {
        if (open) { body.removeChild(open); open = null; return; }
        open = detail(r);
        body.insertBefore(open, tr.nextSibling);
      });
      body.appendChild(tr);
    });
    shown.textContent = match.length > LIMIT
      ? "showing the first " + LIMIT + " of " + match.length + " questions: narrow the filters"
      : match.length + " of " + rows.length + " questions";
  }
  draw();
})();
