// Package headless starts headless Chromium for the tests that look at a
// page as a person would (the console, the bench report): it finds the
// binary (skipping without one, failing when CI=true), starts it with the
// flags this machine's closed network needs, and collects the page's
// console errors.
package headless
