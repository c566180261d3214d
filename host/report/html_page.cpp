#include "host/report/html_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fabemu::report {
namespace {

constexpr const char* kStyle = R"(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px auto; max-width: 1100px; color: #1d2330; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 32px; border-bottom: 1px solid #d6dae3; }
table { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eceef3; text-align: left; }
th { background: #f3f5f9; } tr.warn td { background: #fff1e6; }
.tiles { display: flex; flex-wrap: wrap; gap: 10px; }
.tile { border: 1px solid #d6dae3; border-radius: 6px; padding: 6px 12px; }
.tile b { display: block; font-size: 18px; }
svg.chart { display: block; margin: 8px 0; } svg.chart text { font: 11px system-ui, sans-serif; fill: #333; }
.footer { color: #777; margin-top: 32px; font-size: 12px; }
)";

// Series colours (colour-blind safe, Okabe-Ito), the warning colour, the bar colour.
constexpr const char* kSeries[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442"};
constexpr const char* kBar = "#0072B2";
constexpr const char* kWarn = "#D55E00";

std::string number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

std::string value_text(double v, const std::string& unit) {
  if (unit == "bytes") return human_bytes(v);
  return unit.empty() ? number(v) : number(v) + " " + unit;
}

std::string svg_open(const std::string& title, int width, int height, size_t points) {
  return fmt::format("<svg class=\"chart\" width=\"{0}\" height=\"{1}\" "
                     "viewBox=\"0 0 {0} {1}\" data-points=\"{2}\" role=\"img\" aria-label=\"{3}\">"
                     "<text x=\"4\" y=\"14\" style=\"font-weight:bold\">{3}</text>",
                     width, height, points, html_escape(title));
}

// The value axis of a bar chart: 0, half and the top, with grid lines.
std::string value_axis(double top, int x0, int x1, int y_top, int y_bottom, const std::string& unit) {
  std::string out;
  for (int i = 0; i <= 2; ++i) {
    const double v = top * i / 2;
    const int y = y_bottom - (y_bottom - y_top) * i / 2;
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e3e6ec\"/>", x0, y, x1, y);
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", x0 - 4, y + 4,
                       html_escape(value_text(v, unit)));
  }
  return out;
}

// Every k-th label, so that at most ~40 are written under the bars.
std::string bar_labels(const std::vector<std::string>& labels, int x0, double step, int y) {
  std::string out;
  const size_t every = std::max<size_t>(1, (labels.size() + 39) / 40);
  for (size_t i = 0; i < labels.size(); i += every) {
    const double x = x0 + step * (static_cast<double>(i) + 0.5);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"end\" transform=\"rotate(-45 {:.1f} {})\">{}</text>",
                       x, y, x, y, html_escape(labels[i]));
  }
  return out;
}

// A light-to-dark blue for a share 0..1 of the largest value (square root: small cells stay visible).
std::string heat_colour(double share) {
  const double t = std::sqrt(std::clamp(share, 0.0, 1.0));
  const auto mix = [&](int from, int to) { return static_cast<int>(std::lround(from + (to - from) * t)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(0xdd, 0x08), mix(0xeb, 0x30), mix(0xf7, 0x6b));
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string human_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t u = 0;
  while (std::fabs(bytes) >= 1024 && u + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", number(bytes)) : fmt::format("{:.3g} {}", bytes, kUnits[u]);
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

void HtmlPage::section(std::string_view heading) { body_ += fmt::format("<h2>{}</h2>\n", html_escape(heading)); }

void HtmlPage::paragraph(std::string_view text) { body_ += fmt::format("<p>{}</p>\n", html_escape(text)); }

void HtmlPage::numbers(const std::vector<std::pair<std::string, std::string>>& items) {
  body_ += "<div class=\"tiles\">";
  for (const auto& [name, value] : items) {
    body_ += fmt::format("<div class=\"tile\">{}<b>{}</b></div>", html_escape(name), html_escape(value));
  }
  body_ += "</div>\n";
}

void HtmlPage::table(const std::vector<std::string>& header, const std::vector<TableRow>& rows) {
  body_ += "<table><tr>";
  for (const auto& h : header) body_ += fmt::format("<th>{}</th>", html_escape(h));
  body_ += "</tr>\n";
  for (const auto& row : rows) {
    body_ += row.highlight ? "<tr class=\"warn\">" : "<tr>";
    for (const auto& c : row.cells) body_ += fmt::format("<td>{}</td>", html_escape(c));
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

void HtmlPage::bar_chart(const BarChart& chart) {
  const int width = 1000, height = 280, x0 = 80, x1 = width - 10, y_top = 24, y_bottom = height - 60;
  const double top = std::max(1.0, chart.values.empty() ? 1.0 : *std::max_element(chart.values.begin(), chart.values.end()));
  const double step = chart.values.empty() ? 0 : static_cast<double>(x1 - x0) / static_cast<double>(chart.values.size());
  std::string svg = svg_open(chart.title, width, height, chart.values.size());
  svg += value_axis(top, x0, x1, y_top, y_bottom, chart.unit);
  for (size_t i = 0; i < chart.values.size(); ++i) {
    const double h = (y_bottom - y_top) * chart.values[i] / top;
    const bool warn = std::find(chart.highlight.begin(), chart.highlight.end(), i) != chart.highlight.end();
    svg += fmt::format("<rect class=\"point\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
                       "fill=\"{}\"><title>{}: {}</title></rect>",
                       x0 + step * static_cast<double>(i) + step * 0.1, y_bottom - h, std::max(step * 0.8, 0.5),
                       std::max(h, 0.5), warn ? kWarn : kBar, html_escape(chart.labels[i]),
                       html_escape(value_text(chart.values[i], chart.unit)));
  }
  svg += bar_labels(chart.labels, x0, step, y_bottom + 12);
  body_ += svg + "</svg>\n";
}

void HtmlPage::stacked_bars(const StackedBarChart& chart) {
  const int width = 1000, height = 300, x0 = 80, x1 = width - 10, y_top = 40, y_bottom = height - 60;
  const size_t bars = chart.labels.size();
  std::vector<double> totals(bars, 0);
  size_t points = 0;
  for (const auto& [name, values] : chart.series) {
    for (size_t i = 0; i < bars && i < values.size(); ++i) {
      totals[i] += values[i];
      points += values[i] > 0 ? 1 : 0;
    }
  }
  const double top = std::max(1.0, bars == 0 ? 1.0 : *std::max_element(totals.begin(), totals.end()));
  const double step = bars == 0 ? 0 : static_cast<double>(x1 - x0) / static_cast<double>(bars);
  std::string svg = svg_open(chart.title, width, height, points);
  svg += value_axis(top, x0, x1, y_top, y_bottom, chart.unit);
  std::vector<double> base(bars, 0);
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const auto& [name, values] = chart.series[s];
    const char* colour = kSeries[s % std::size(kSeries)];
    svg += fmt::format("<rect x=\"{}\" y=\"22\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"31\">{}</text>",
                       x0 + 150 * static_cast<int>(s), colour, x0 + 14 + 150 * static_cast<int>(s), html_escape(name));
    for (size_t i = 0; i < bars && i < values.size(); ++i) {
      if (values[i] <= 0) continue;
      const double h = (y_bottom - y_top) * values[i] / top;
      const double y = y_bottom - (y_bottom - y_top) * base[i] / top - h;
      svg += fmt::format("<rect class=\"point\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
                         "fill=\"{}\"><title>{} {}: {}</title></rect>",
                         x0 + step * static_cast<double>(i) + step * 0.1, y, std::max(step * 0.8, 0.5), h, colour,
                         html_escape(chart.labels[i]), html_escape(name), html_escape(value_text(values[i], chart.unit)));
      base[i] += values[i];
    }
  }
  svg += bar_labels(chart.labels, x0, step, y_bottom + 12);
  body_ += svg + "</svg>\n";
}

void HtmlPage::heatmap(const Heatmap& chart) {
  const size_t rows = chart.row_labels.size(), cols = chart.col_labels.size();
  const double square = std::clamp(640.0 / static_cast<double>(std::max<size_t>({rows, cols, 1})), 2.0, 28.0);
  const double cw = chart.cell_width > 0 ? chart.cell_width : square;
  const double ch = chart.cell_height > 0 ? chart.cell_height : square;
  size_t label_chars = 1;
  for (const auto& l : chart.col_labels) label_chars = std::max(label_chars, l.size());
  const int x0 = 130, y0 = 50;
  const int width = x0 + static_cast<int>(cw * static_cast<double>(cols)) + 20;
  const int height = y0 + static_cast<int>(ch * static_cast<double>(rows)) + 40;
  double top = 0;
  size_t points = 0;
  for (const auto& row : chart.values) {
    for (const double v : row) {
      top = std::max(top, v);
      points += v > 0 ? 1 : 0;
    }
  }
  std::string svg = svg_open(chart.title, std::max(width, 400), height, points);
  svg += fmt::format("<text x=\"{}\" y=\"36\">{} (columns) &#8594;</text>", x0, html_escape(chart.col_axis));
  svg += fmt::format("<text x=\"4\" y=\"{}\">{} &#8595;</text>", y0 - 2, html_escape(chart.row_axis));
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#f7f8fa\" stroke=\"#d6dae3\"/>",
                     x0, y0, cw * static_cast<double>(cols), ch * static_cast<double>(rows));
  // Row labels at least 12 px apart; column labels their text's width apart (~7 px a character).
  const size_t every_row = std::max<size_t>(1, static_cast<size_t>(std::ceil(12.0 / ch)));
  const size_t every_col = std::max<size_t>(1, static_cast<size_t>(std::ceil((7.0 * static_cast<double>(label_chars) + 6) / cw)));
  for (size_t r = 0; r < rows; ++r) {
    if (r % every_row == 0) {
      svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", x0 - 4,
                         y0 + ch * (static_cast<double>(r) + 0.5) + 4, html_escape(chart.row_labels[r]));
    }
    for (size_t c = 0; c < cols && c < chart.values[r].size(); ++c) {
      const double v = chart.values[r][c];
      if (v <= 0) continue;
      svg += fmt::format("<rect class=\"point\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
                         "fill=\"{}\"><title>{} &#8594; {}: {}</title></rect>",
                         x0 + cw * static_cast<double>(c), y0 + ch * static_cast<double>(r), cw, ch,
                         heat_colour(v / top), html_escape(chart.row_labels[r]), html_escape(chart.col_labels[c]),
                         html_escape(value_text(v, chart.unit)));
    }
  }
  for (size_t c = 0; c < cols; c += every_col) {
    const double x = x0 + cw * (static_cast<double>(c) + 0.5);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", x,
                       y0 + ch * static_cast<double>(rows) + 14, html_escape(chart.col_labels[c]));
  }
  body_ += svg + "</svg>\n";
}

std::string HtmlPage::html() const {
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
                     "'unsafe-inline'\"><title>{0}</title><style>{1}</style></head>\n<body><h1>{0}</h1>\n{2}"
                     "<p class=\"footer\">Written by fabemu. Self-contained: no scripts, no requests.</p>"
                     "</body></html>\n",
                     html_escape(title_), kStyle, body_);
}

}  // namespace fabemu::report
