// Precondition check for the browser tests: can headless Chromium start and render a page?
import { launchBrowser } from './harness.mjs';

const b = await launchBrowser();
try {
  const page = await b.context.newPage();
  await page.setContent('<p id="p">ok</p>');
  if ((await page.textContent('#p')) !== 'ok') throw new Error('chromium rendered nothing');
} finally {
  await b.close();
}
