import { EventEmitter } from 'node:events';
import { type CallRow, type Store, selectCallRow } from '../store/index.js';

/**
 * History's live view (server-sent events, routes/api/calls.ts): every call once committed. This
 * instance's come from the call recorder after each commit (`publish`); on PostgreSQL other
 * instances' come as their notifications arrive, read back by id only while someone listens.
 */
export interface LiveTail {
  /** `recorded` with the calls of each commit, once committed. */
  readonly events: EventEmitter<{ recorded: [CallRow[]] }>;
  /** Whether anyone listens: the recorder makes the rows only then. */
  wanted(): boolean;
  /** Calls this instance has just committed. */
  publish(rows: CallRow[]): void;
  /** Stops following other instances' calls. */
  close(): void;
}

export function createLiveTail(store: Store): LiveTail {
  const { db } = store;
  const events = new EventEmitter<{ recorded: [CallRow[]] }>();
  // One listener per live-tail client.
  events.setMaxListeners(0);
  const wanted = () => events.listenerCount('recorded') > 0;
  const fromOtherInstances = (ids: readonly number[]) => {
    if (ids.length === 0 || !wanted()) return;
    void selectCallRow(db.selectFrom('calls'))
      .where('id', 'in', [...ids])
      .orderBy('id')
      .execute()
      .then((rows) => {
        if (rows.length > 0) events.emit('recorded', rows);
      })
      .catch(() => {
        // The database went away meanwhile: the live tail misses these; History has them.
      });
  };
  store.events.on('callsFromOtherInstances', fromOtherInstances);
  return {
    events,
    wanted,
    publish: (rows) => events.emit('recorded', rows),
    close: () => store.events.off('callsFromOtherInstances', fromOtherInstances),
  };
}
