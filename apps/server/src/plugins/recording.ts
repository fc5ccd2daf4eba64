import fp from 'fastify-plugin';
import { type CallRecorder, createCallRecorder } from '../recording/recorder.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Every call's record, with the deliveries it queues, in one commit (recording/). */
    recorder: CallRecorder;
  }
}

/**
 * The call recorder: each call and its deliveries go in one unit of work of the store (the outbox
 * adds the deliveries), and History's live tail is told of each commit. What is pending is
 * committed as the server closes, before the outbox stops and the store closes.
 */
export const recordingPlugin = fp(
  async (app) => {
    const { store, outbox, history } = app;
    const recorder = createCallRecorder({ store, enqueue: outbox.enqueue, onCommitted: history.live });
    app.decorate('recorder', recorder);
    app.addHook('onClose', async () => {
      await recorder.flush();
    });
  },
  { name: 'recording', dependencies: ['store', 'outbox', 'history'] },
);
