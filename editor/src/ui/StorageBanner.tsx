/** A banner while the server's storage is degraded or low (see model/storageHealth.ts). */
import { useEffect, useMemo, useSyncExternalStore } from 'react';
import { type StorageView, StorageWatch } from '../model/storageHealth.js';
import { useEditor } from './context.js';

const NO_SUBSCRIPTION = () => () => {};
const NOTHING = (): StorageView | undefined => undefined;

export function StorageBanner() {
  const { api } = useEditor();
  const watch = useMemo(() => (api ? new StorageWatch(() => api.health()) : undefined), [api]);
  useEffect(() => {
    watch?.start();
    return () => watch?.stop();
  }, [watch]);
  const view = useSyncExternalStore(watch?.subscribe ?? NO_SUBSCRIPTION, watch?.getSnapshot ?? NOTHING);
  // Always there (empty when all is well): the app's grid gives it a row of its own.
  return (
    <div className="sb-storage-slot">
      {view && (
        <div
          className={`sb-storage-banner sb-storage-${view.level}`}
          role={view.level === 'degraded' ? 'alert' : 'status'}
          data-testid="storage-banner"
          data-code={view.code}
        >
          {view.text}
        </div>
      )}
    </div>
  );
}
