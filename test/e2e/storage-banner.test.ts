/**
 * The editor shows a banner while the server's storage is degraded, and clears it once writes
 * succeed again — in Debian's Chromium against the real server, whose disk is made to refuse
 * writes through the store's fault layer.
 */
import { describe, expect, it } from 'vitest';
import { clearFaults, injectFaults } from '../../runtime/src/store/faults.js';
import { simpleFlow } from '../server/helpers.js';
import { browserTests, WAIT } from './harness.js';

const srv = browserTests('storage-banner');
const { serve, person } = srv;

describe('storage banner', { timeout: 120_000 }, () => {
  it('appears while the disk refuses writes, names why, and goes once they succeed', async () => {
    await serve();
    const ada = await person('/');
    const banner = ada.page.getByTestId('storage-banner');
    expect(await banner.count()).toBe(0);
    try {
      injectFaults({ path: 'catalog.json', code: 'ENOSPC', ops: ['write'] });
      const r = await srv.server.app.inject({
        method: 'PUT',
        url: '/api/flows/full',
        headers: { host: new URL(srv.url).host, 'content-type': 'application/json' },
        payload: JSON.stringify(simpleFlow('full')),
      });
      expect(r.statusCode).toBe(507);
      await ada.page.locator('[data-testid="storage-banner"][data-code="storage_full"]').waitFor(WAIT);
      expect(await banner.getAttribute('role')).toBe('alert');
      expect(await banner.textContent()).toMatch(/disk is full \(catalog\.json\)/);
    } finally {
      clearFaults();
    }
    await banner.waitFor({ ...WAIT, state: 'detached' });
    expect(ada.errors).toEqual([]);
  });
});
