// "Compare policies": the server answers the table as Markdown and the chart as SVG text.

/**
 * The Markdown the preview shows: the chart, as a data: image (VS Code's Markdown preview
 * accepts `data:image/...;` links and its strict content security policy allows data: images),
 * after the heading (the first paragraph, which also names the preview's tab), above the table.
 * Without a chart (an older server), the Markdown as it is.
 */
export function comparisonMarkdown(result: { markdown: string; chart?: unknown }): string {
    const { markdown, chart } = result;
    if (typeof chart !== 'string') {
        return markdown;
    }
    const image = `![Memory against recompute of every candidate policy](data:image/svg+xml;base64,${Buffer.from(chart, 'utf8').toString('base64')})`;
    const end = markdown.indexOf('\n\n');
    return end < 0 ? `${markdown}\n\n${image}\n` : `${markdown.slice(0, end)}\n\n${image}${markdown.slice(end)}`;
}
