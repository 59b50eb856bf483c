// Headless Debian Chromium for the e2e scripts, with the flags this machine needs (no GPU, no sandbox as root,
// no background networking: the network is closed) and a fresh profile directory. Returns { ctx, udd }.
const fs = require('fs'), os = require('os'), path = require('path');
const { chromium } = require('playwright-core');

async function launchBrowser(viewport) {
  const udd = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-chromium-'));
  const ctx = await chromium.launchPersistentContext(udd, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport,
  });
  return { ctx, udd };
}

module.exports = { launchBrowser };
