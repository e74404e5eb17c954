package web

import "html/template"

// pageHead is the start the server-rendered pages share: the head with
// the title, description and Open Graph tags a link preview shows, the
// style, and the site's header. Its data has Title, Description and Path.
const pageHead = `{{define "head"}}<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<meta name="description" content="{{.Description}}">
<meta property="og:type" content="{{template "og-type"}}">
<meta property="og:title" content="{{.Title}}">
<meta property="og:description" content="{{.Description}}">
<meta property="og:url" content="{{.Path}}">
<link rel="canonical" href="{{.Path}}">
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/style.css">
</head>
<body class="{{template "body-class"}}">
<header class="top"><h1><a href="/">scout</a> <span>game servers</span></h1></header>
{{end}}`

// parsePage returns the page named name: pageHead with Open Graph type
// ogType and body class class, then body (from the site's header on).
func parsePage(name, ogType, class, body string) *template.Template {
	t := template.Must(template.New(name).Parse(`{{template "head" .}}` + body))
	template.Must(t.Parse(pageHead))
	template.Must(t.New("og-type").Parse(ogType))
	template.Must(t.New("body-class").Parse(class))
	return t
}
