// Installed first, in a script of its own, so that even a syntax error in the main script
// shows in the page (and the tests, which read the DOM, see it).
(function () {
  'use strict';
  function show(text) {
    var box = document.getElementById('errors');
    box.hidden = false;
    box.textContent += text + '\n';
    document.documentElement.setAttribute('data-errors', 'true');
  }
  window.stallwatchError = show;
  window.addEventListener('error', function (event) {
    show('error: ' + event.message + ' (line ' + event.lineno + ':' + event.colno + ')');
  });
  window.addEventListener('unhandledrejection', function (event) {
    show('unhandled rejection: ' + event.reason);
  });
})();
