import type { SchoolRow } from '../store/index.js';

/** FCM topic names allow `[a-zA-Z0-9-_.~%]`; anything else is percent-encoded. */
const topicPart = (text: string): string =>
  Array.from(new TextEncoder().encode(text), (b) => {
    const ch = String.fromCharCode(b);
    return /[A-Za-z0-9\-_.~]/.test(ch) ? ch : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }).join('');

/** A school's topic: typed notifications (SendNotificationType) go here. */
export const schoolTopic = (school: Pick<SchoolRow, 'topic_key'>): string => `school-${school.topic_key}`;

/** A class's topic within its school: marks (SendMarkNotes) go here. */
export const classTopic = (school: Pick<SchoolRow, 'topic_key'>, classId: string): string =>
  `${schoolTopic(school)}-class-${topicPart(classId)}`;
