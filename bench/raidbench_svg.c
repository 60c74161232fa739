/* SPDX-License-Identifier: BSD-3-Clause */
/* raidbench --svg FILE: the results as line charts, GB/s against the disk
 * count (against the source count for xor_gen), one line per
 * implementation, one panel per operation, size, mode and layout.  The
 * kernel's boot benchmark prints one number per algorithm at one
 * geometry; how a kernel scales with the disk count, and where two cross,
 * is what this picture shows at a glance.
 *
 * Self-contained on purpose: raidbench has no dependencies but libparity
 * (and ISA-L to compare with), and a chart needs only text.  The writer
 * knows nothing of parity: raidbench_svg_add gives it points (panel,
 * x-axis name, series, x, y), kept in insertion order in fixed tables
 * (a point beyond them is dropped with a warning), and raidbench_svg_write
 * draws them.
 *
 *   +--------------------------------------------------+
 *   | title (op, size, mode, layout)                    |
 *   | GB/s                                     legend   |
 *   |  ^   o---o                               -o- impl |
 *   |  |  /     \---o                          -o- impl |
 *   |  +--+---+---+--> disks                            |
 *   +--------------------------------------------------+
 *
 * The x axis is linear from the smallest to the largest x of the panel,
 * ticked at each x that has a point; the y axis starts at 0 and ends at
 * the next 1, 2 or 5 x 10^k above the largest y, ticked in five steps.
 * Each point is a circle whose <title> says what it is ("avx2x4: 8 disks,
 * 12.34 GB/s"): a browser shows it on hover, and a test reads it back.
 * Colours come from a fixed palette of twelve that stay apart on white,
 * one per name, the same in every panel; names past twelve reuse them
 * with a dashed line.
 */

#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "raidbench.h"

#define MAX_PANELS 64
#define MAX_SERIES 24
#define MAX_POINTS 64

#define PANEL_W 640
#define PANEL_H 360
#define PLOT_X 70               /* the plot area inside a panel */
#define PLOT_Y 40
#define PLOT_W 400
#define PLOT_H 270
#define COLUMNS 2

struct series {
  char name[32];
  unsigned int n;
  double x[MAX_POINTS], y[MAX_POINTS];
};

struct panel {
  char title[96];
  char xname[16];
  unsigned int nseries;
  struct series s[MAX_SERIES];
};

static struct panel panels[MAX_PANELS];
static unsigned int npanels;
static bool dropped;
/* Every series name in the order first seen: a name's colour is its
 * place here, the same in every panel.
 */
static char names[MAX_SERIES * 2][32];
static unsigned int nnames;

static const char *const palette[] = {
  "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
  "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#000000", "#aec7e8",
};
#define NCOLOURS (sizeof palette / sizeof palette[0])

static unsigned int
colour_of (const char *name)
{
  unsigned int i = 0;

  while (i < nnames && strcmp (names[i], name) != 0)
    i++;
  return i;
}

void
raidbench_svg_add (const char *panel, const char *xname, const char *series,
                   double x, double y)
{
  struct panel *p = NULL;
  struct series *s = NULL;

  for (unsigned int i = 0; i < npanels && !p; i++)
    if (strcmp (panels[i].title, panel) == 0)
      p = &panels[i];
  if (!p && npanels < MAX_PANELS) {
    p = &panels[npanels++];
    snprintf (p->title, sizeof p->title, "%s", panel);
    snprintf (p->xname, sizeof p->xname, "%s", xname);
  }
  for (unsigned int i = 0; p && i < p->nseries && !s; i++)
    if (strcmp (p->s[i].name, series) == 0)
      s = &p->s[i];
  if (p && !s && p->nseries < MAX_SERIES) {
    s = &p->s[p->nseries++];
    snprintf (s->name, sizeof s->name, "%s", series);
    if (colour_of (s->name) == nnames && nnames < MAX_SERIES * 2)
      snprintf (names[nnames++], sizeof names[0], "%s", s->name);
  }
  if (!s || s->n == MAX_POINTS) {
    if (!dropped)
      fprintf (stderr, "raidbench: --svg: too many panels, rows or points; "
               "the chart leaves some out\n");
    dropped = true;
    return;
  }
  s->x[s->n] = x;
  s->y[s->n] = y;
  s->n++;
}

/* Text for an SVG element: the five characters XML reserves, escaped. */
static void
xml_text (FILE *f, const char *s)
{
  for (; *s; s++)
    switch (*s) {
    case '&': fputs ("&amp;", f); break;
    case '<': fputs ("&lt;", f); break;
    case '>': fputs ("&gt;", f); break;
    case '"': fputs ("&quot;", f); break;
    case '\'': fputs ("&apos;", f); break;
    default: fputc (*s, f);
    }
}

/* The next 1, 2 or 5 x 10^k at or above v (v > 0). */
static double
nice_ceiling (double v)
{
  double p = pow (10, floor (log10 (v)));

  return v <= p ? p : v <= 2 * p ? 2 * p : v <= 5 * p ? 5 * p : 10 * p;
}

static void
draw_panel (FILE *f, const struct panel *p, double ox, double oy)
{
  double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
  double xs[MAX_SERIES * MAX_POINTS];
  unsigned int nxs = 0;

  for (unsigned int i = 0; i < p->nseries; i++)
    for (unsigned int k = 0; k < p->s[i].n; k++) {
      double x = p->s[i].x[k];
      bool seen = false;

      xmin = fmin (xmin, x);
      xmax = fmax (xmax, x);
      ymax = fmax (ymax, p->s[i].y[k]);
      for (unsigned int j = 0; j < nxs && !seen; j++)
        seen = xs[j] == x;
      if (!seen)
        xs[nxs++] = x;
    }
  ymax = ymax > 0 ? nice_ceiling (ymax) : 1;
  if (xmax == xmin) {           /* one x: centre it */
    xmin -= 1;
    xmax += 1;
  }
#define PX(x) (ox + PLOT_X + ((x) - xmin) / (xmax - xmin) * PLOT_W)
#define PY(y) (oy + PLOT_Y + PLOT_H - (y) / ymax * PLOT_H)

  fprintf (f, "<g class=\"panel\">\n<text x=\"%.1f\" y=\"%.1f\" "
           "font-size=\"15\" font-weight=\"bold\">", ox + PLOT_X, oy + 22);
  xml_text (f, p->title);
  fprintf (f, "</text>\n");
  /* Grid and y ticks. */
  for (int t = 0; t <= 5; t++) {
    double y = ymax * t / 5;

    fprintf (f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
             "stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
             "text-anchor=\"end\" font-size=\"12\">%g</text>\n",
             PX (xmin), PY (y), PX (xmax), PY (y), PX (xmin) - 6,
             PY (y) + 4, y);
  }
  for (unsigned int j = 0; j < nxs; j++)
    fprintf (f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
             "stroke=\"#000\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
             "text-anchor=\"middle\" font-size=\"12\">%g</text>\n",
             PX (xs[j]), PY (0), PX (xs[j]), PY (0) + 5, PX (xs[j]),
             PY (0) + 19, xs[j]);
  fprintf (f, "<path d=\"M%.1f %.1fV%.1fH%.1f\" fill=\"none\" "
           "stroke=\"#000\"/>\n", PX (xmin), PY (ymax), PY (0), PX (xmax));
  fprintf (f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
           "font-size=\"13\">", PX ((xmin + xmax) / 2), PY (0) + 38);
  xml_text (f, p->xname);
  fprintf (f, "</text>\n<text transform=\"translate(%.1f %.1f) rotate(-90)\""
           " text-anchor=\"middle\" font-size=\"13\">GB/s</text>\n",
           ox + 22, PY (ymax / 2));

  for (unsigned int i = 0; i < p->nseries; i++) {
    const struct series *s = &p->s[i];
    unsigned int c = colour_of (s->name);
    const char *colour = palette[c % NCOLOURS];
    const char *dash = c >= NCOLOURS ? " stroke-dasharray=\"6 3\"" : "";
    double ly = oy + PLOT_Y + 8 + i * 17;

    fprintf (f, "<g class=\"series\" data-name=\"");
    xml_text (f, s->name);
    fprintf (f, "\">\n<polyline fill=\"none\" stroke=\"%s\" "
             "stroke-width=\"2\"%s points=\"", colour, dash);
    for (unsigned int k = 0; k < s->n; k++)
      fprintf (f, "%s%.1f,%.1f", k ? " " : "", PX (s->x[k]), PY (s->y[k]));
    fprintf (f, "\"/>\n");
    for (unsigned int k = 0; k < s->n; k++) {
      fprintf (f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\">"
               "<title>", PX (s->x[k]), PY (s->y[k]), colour);
      xml_text (f, s->name);
      fprintf (f, ": %g %s, %.2f GB/s</title></circle>\n", s->x[k],
               p->xname, s->y[k]);
    }
    fprintf (f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
             "stroke=\"%s\" stroke-width=\"2\"%s/>\n<text x=\"%.1f\" "
             "y=\"%.1f\" font-size=\"12\">", ox + PLOT_X + PLOT_W + 15, ly,
             ox + PLOT_X + PLOT_W + 35, ly, colour, dash,
             ox + PLOT_X + PLOT_W + 40, ly + 4);
    xml_text (f, s->name);
    fprintf (f, "</text>\n</g>\n");
  }
  fprintf (f, "</g>\n");
#undef PX
#undef PY
}

int
raidbench_svg_write (const char *path, const char *caption)
{
  unsigned int rows = (npanels + COLUMNS - 1) / COLUMNS;
  unsigned int cols = npanels < COLUMNS ? (npanels ? npanels : 1) : COLUMNS;
  double w = cols * PANEL_W, h = rows * PANEL_H + 40;
  FILE *f = fopen (path, "w");

  if (f == NULL)
    return -1;
  fprintf (f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
           "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
           "font-family=\"sans-serif\">\n"
           "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
           "<text x=\"10\" y=\"24\" font-size=\"14\">", w, h, w, h);
  xml_text (f, caption);
  fprintf (f, "</text>\n");
  for (unsigned int i = 0; i < npanels; i++)
    draw_panel (f, &panels[i], (i % COLUMNS) * PANEL_W,
                40 + (i / COLUMNS) * PANEL_H);
  fprintf (f, "</svg>\n");
  if (ferror (f)) {
    int e = errno;

    fclose (f);
    errno = e ? e : EIO;
    return -1;
  }
  return fclose (f);
}
