package bench

// ParseListen is parseListen for the external tests.
var ParseListen = parseListen
