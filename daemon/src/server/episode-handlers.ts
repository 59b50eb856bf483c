/**
 * The episodic layer's request handlers (docs/episodes.md), registered on the Core. Episodes live in the local
 * store only: a team namespace is refused with InvalidState (`data.store: "team"`) before anything is written.
 */
import type { z } from 'zod';
import { CairnError } from '../protocol/errors';
import { Requests, type RequestDef } from '../protocol/methods';
import type * as T from '../protocol/types';
import { searchEpisodes } from '../retrieval/episode-search';
import { propose, searchEvents, type EventVectorSearcher } from '../retrieval/events';
import { Episodes } from '../store/episodes';
import type { Store } from '../store/store';
import type { TeamRouter } from '../team/router';

type On = <P extends z.ZodType, R extends z.ZodType>(
  def: RequestDef<P, R>,
  fn: (p: z.infer<P>) => z.infer<R> | Promise<z.infer<R>>,
) => void;

export function teamRefusal(ns: string): CairnError {
  return new CairnError('InvalidState', `episodes are kept in the local store only; ${ns} is a team namespace (docs/episodes.md#team)`, {
    field: 'namespace',
    store: 'team',
  });
}

export function registerEpisodeHandlers(
  on: On,
  store: Store,
  ctx: { team: () => TeamRouter | undefined; vectors: () => EventVectorSearcher | undefined },
): Episodes {
  const episodes = new Episodes(store);
  const notTeam = (ns: string | undefined) => {
    if (ns !== undefined && ctx.team()?.isTeam(ns)) throw teamRefusal(ns);
  };
  on(Requests.episodesStart, (p: T.EpisodeStartParams) => {
    notTeam(p.namespace);
    return episodes.start(p);
  });
  on(Requests.eventsAppend, (p) => episodes.append(p));
  on(Requests.episodesEnd, (p) => episodes.end(p));
  on(Requests.episodesGet, (p) => episodes.get(p));
  on(Requests.episodesList, (p) => episodes.list(p));
  on(Requests.eventsSearch, (p) => searchEvents(store, episodes, p, ctx.vectors()));
  on(Requests.episodesSearch, (p) => searchEpisodes(store, episodes, p, ctx.vectors()));
  on(Requests.eventsExpand, (p) => episodes.expand(p));
  on(Requests.episodesTimeline, (p) => episodes.timeline(p));
  on(Requests.episodesPropose, (p) => {
    notTeam(p.namespace);
    return propose(store, episodes, p);
  });
  on(Requests.episodesErase, (p) => episodes.erase(p));
  return episodes;
}
