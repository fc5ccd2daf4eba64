import { type ReactNode, useEffect, useId, useRef, useState } from 'react';
import { useNavigate } from 'react-router';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

let canvas2d: boolean | undefined;
/** Whether this browser can draw on a canvas (uPlot cannot do without). */
function canDraw(): boolean {
  canvas2d ??= document.createElement('canvas').getContext('2d') !== null;
  return canvas2d;
}

/**
 * uPlot in React: built when `options` change (memoise them), fed new data with setData, sized to
 * its container. The canvas means nothing to a screen reader, so the figure is named by `title`
 * and described by `summary`, which says in words what the picture shows; `children` (a note, the
 * figures as a table of links) follow it inside the figure.
 *
 * With `hrefAt`, a click on the plot opens the page of the bucket under the pointer:
 * `hrefAt(index, y)`, y in the units of the `y` scale (which series of a stack it fell in is the
 * caller's to tell); undefined where there is nothing to open.
 */
export function UPlotChart({
  title,
  summary,
  options,
  data,
  height = 260,
  hrefAt,
  children,
}: {
  title: string;
  summary: string;
  options: Omit<uPlot.Options, 'width' | 'height'>;
  data: uPlot.AlignedData;
  height?: number;
  hrefAt?: ((index: number, y: number) => string | undefined) | undefined;
  children?: ReactNode;
}) {
  const id = useId();
  const container = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const latest = useRef(data);
  latest.current = data;
  const navigate = useNavigate();
  // The latest props, for the click handler the chart is built with.
  const pick = useRef<(index: number, y: number) => void>(() => {});
  pick.current = (index, y) => {
    const href = hrefAt?.(index, y);
    if (href !== undefined) void navigate(href);
  };
  const [failed, setFailed] = useState(false);

  useEffect(() => {
    const element = container.current;
    if (!element) return;
    let chart: uPlot;
    try {
      if (!canDraw()) throw new Error('no 2D canvas');
      chart = new uPlot({ ...options, width: element.clientWidth || 640, height }, latest.current, element);
    } catch {
      // No canvas (a locked-down browser, a test DOM): the summary still says it all.
      setFailed(true);
      return;
    }
    plot.current = chart;
    const onClick = () => {
      const index = chart.cursor.idx;
      const top = chart.cursor.top;
      if (index === null || index === undefined || top === undefined || top < 0) return;
      pick.current(index, chart.posToVal(top, 'y'));
    };
    chart.over.addEventListener('click', onClick);
    const observer =
      typeof ResizeObserver === 'undefined'
        ? undefined
        : new ResizeObserver(([entry]) => {
            const width = Math.floor(entry?.contentRect.width ?? 0);
            if (width > 0 && width !== chart.width) chart.setSize({ width, height });
          });
    observer?.observe(element);
    return () => {
      chart.over.removeEventListener('click', onClick);
      observer?.disconnect();
      chart.destroy();
      plot.current = null;
    };
  }, [options, height]);

  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);

  return (
    <figure
      className={hrefAt ? 'chart chart-pickable' : 'chart'}
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-summary`}
    >
      <figcaption id={`${id}-title`} className="chart-title">
        {title}
      </figcaption>
      <div
        ref={container}
        className="chart-canvas"
        role="img"
        aria-labelledby={`${id}-title`}
        aria-describedby={`${id}-summary`}
      >
        {failed ? <p className="muted">The chart cannot be drawn in this browser.</p> : null}
      </div>
      <p id={`${id}-summary`} className="chart-summary">
        {summary}
      </p>
      {children}
    </figure>
  );
}
