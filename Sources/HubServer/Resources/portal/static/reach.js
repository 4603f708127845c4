// msi-hub portal: the message page's reach report, kept up to date without a reload. Every few seconds (while the
// page is visible) the report is read again as JSON from the section's data-reach-url, and its counts, responses,
// platforms and the devices not answered are written in place, as text only. Without it the page shows the report
// as it was when loaded.
(function () {
  'use strict';

  var section = document.getElementById('reach');
  if (!section || !window.fetch) { return; }
  var url = section.getAttribute('data-reach-url');
  var interval = parseInt(section.getAttribute('data-poll-ms'), 10) || 2500;
  var counts = ['audience', 'fcm_accepted', 'received', 'opened', 'acknowledged', 'not_answered', 'unreachable'];

  function text(id, value) {
    var element = document.getElementById(id);
    if (element) { element.textContent = String(value); }
  }

  // A table row of `cells` (strings); a cell in `code` is shown as code.
  function row(cells, code) {
    var tr = document.createElement('tr');
    cells.forEach(function (cell, index) {
      var td = document.createElement('td');
      if (index === code) {
        var element = document.createElement('code');
        element.textContent = cell;
        td.appendChild(element);
      } else {
        td.textContent = cell;
      }
      tr.appendChild(td);
    });
    return tr;
  }

  function replaceChildren(parent, children) {
    while (parent.firstChild) { parent.removeChild(parent.firstChild); }
    children.forEach(function (child) { parent.appendChild(child); });
  }

  function show(report) {
    counts.forEach(function (name) { text('reach-' + name, report[name] || 0); });
    var responses = report.responses || {};
    replaceChildren(document.getElementById('reach-responses'), Object.keys(responses).sort().map(function (key) {
      var li = document.createElement('li');
      var response = document.createElement('span');
      response.className = 'response';
      response.textContent = key;
      var count = document.createElement('span');
      count.className = 'count';
      count.textContent = String(responses[key]);
      li.appendChild(response);
      li.appendChild(document.createTextNode(': '));
      li.appendChild(count);
      return li;
    }));
    var platforms = report.platforms || {};
    replaceChildren(document.getElementById('reach-platforms'), Object.keys(platforms).sort().map(function (name) {
      var p = platforms[name];
      return row([name, String(p.audience), String(p.received), String(p.opened), String(p.acknowledged)], -1);
    }));
    var silent = report.not_answered_devices || [];
    replaceChildren(document.getElementById('reach-silent'), silent.map(function (device) {
      return row([device.device, device.person || '', device.platform], 0);
    }));
    document.getElementById('reach-none-silent').hidden = silent.length > 0;
    document.getElementById('reach-more').hidden = !report.next;
    text('reach-status', 'updated ' + new Date().toLocaleTimeString());
  }

  function poll() {
    if (document.hidden) { return; }
    fetch(url, { credentials: 'same-origin', headers: { Accept: 'application/json' } })
      .then(function (response) {
        var type = response.headers.get('Content-Type') || '';
        if (!response.ok || type.indexOf('application/json') !== 0) { throw new Error('status ' + response.status); }
        return response.json();
      })
      .then(show)
      .catch(function () { text('reach-status', 'not updated: the hub did not answer'); });
  }

  section.setAttribute('data-live', 'true');
  window.setInterval(poll, interval);
  document.addEventListener('visibilitychange', poll);
})();
