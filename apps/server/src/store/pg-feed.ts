import pg from 'pg';

/** The channel committed calls are announced on, to every instance (LISTEN/NOTIFY). */
export const CALLS_CHANNEL = 'school_calls';

/** A notification's payload: which instance committed which calls. Kept well under 8000 bytes. */
export interface CallsNotice {
  /** The instance that committed them (it has told its own listeners already). */
  readonly from: string;
  readonly ids: readonly number[];
  /** Some of these calls queued deliveries: every instance's dispatcher may claim them now. */
  readonly queued?: boolean;
}

/** Ids per notification: 350 ids of up to 16 digits and commas stay under PostgreSQL's 8000-byte payload limit. */
export const IDS_PER_NOTICE = 350;

export interface CallFeed {
  close(): Promise<void>;
}

/**
 * Listens for calls committed by other instances on a connection of its own (a pooled connection
 * cannot hold a LISTEN). A dropped connection is reopened after a pause; what was committed
 * meanwhile is not replayed (the live tail says so by reconnecting, and History has it all).
 */
export function listenForCalls(
  connectionString: string,
  self: string,
  onCalls: (ids: number[], queued: boolean) => void,
  onError: (err: unknown) => void,
): CallFeed {
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  async function connect(): Promise<void> {
    if (closed) return;
    const c = new pg.Client({ connectionString, application_name: 'school-messaging-listen' });
    client = c;
    c.on('notification', (message) => {
      if (message.channel !== CALLS_CHANNEL || !message.payload) return;
      try {
        const notice = JSON.parse(message.payload) as CallsNotice;
        if (notice.from !== self && Array.isArray(notice.ids))
          onCalls(notice.ids.map(Number), notice.queued === true);
      } catch (err) {
        onError(err);
      }
    });
    const reconnect = (err?: unknown) => {
      if (closed || client !== c) return;
      client = undefined;
      if (err) onError(err);
      c.end().catch(() => {});
      retry = setTimeout(() => void connect(), 1000);
      retry.unref();
    };
    c.on('error', reconnect);
    c.on('end', () => reconnect());
    try {
      await c.connect();
      await c.query(`LISTEN ${CALLS_CHANNEL}`);
    } catch (err) {
      reconnect(err);
    }
  }

  void connect();
  return {
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    },
  };
}
