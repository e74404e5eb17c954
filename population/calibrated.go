package population

// The model's departures from the modern lists (fitted.go), calibrated to
// the paper's Table 2, where the 2007 population the paper measured differed
// from today's lists. Reproduce with
//
//	go run ./population/internal/calib            # fits of Modern and Fitted
//	go run ./population/internal/calib -grid -spa 4.465 -kas 1,1.5,2 -k16 1,2,2.5,3
//	go run ./population/internal/calib -grid -sim=false -seeds 5 -aurank 5,8,10,12,15,20
//
// Scales (exponents and ports per address stay the modern lists' fits):
// ASes per country and /16s per AS are 1.5 and 3 times the modern lists'
// scales, the grid point that best fits Table 2's initial probes (step 4,
// six rows) and its "/8 clusters" read as step 3's clusters, over seeds 1
// to 3. The modern scales give 1,270-1,410 initial probes for CS:S against
// the paper's 1,694-2,159: a 2007 population spread over more networks and
// more /16s, as enthusiast and ISP hosting was.
//
// Australia's rank: the modern ranking puts it 5th (from QuakeWorld's
// Australian community); the paper's AU rows imply that 2.7-6.8% of the ET
// servers and 2.0-2.6% of the CS:S servers were playable from Melbourne
// (probes between the end of calibration and the auto-stop, less the
// window; see EVALUATION.md). Rank 10 brings the ET world's share into that
// range (5.4% over seeds 1-5, against 9.2% at rank 5); lower ranks change it
// little, the rest being New Zealand, Singapore and Asia.
//
// Hubs: an AS with at least calHubAddrs addresses sits in a hub city of its
// country (hubWeight, from the QuakeWorld list's own city coordinates), not
// in a uniformly drawn WonderProxy city.
const (
	calASPerCountryC  = 1.5 * fitASPerCountryC
	calSlash16PerASC  = 3 * fitSlash16PerASC
	calServersPerAddr = fitServersPerAddr
	calHubAddrs       = 10
	calAURank         = 10
)

// CountryRank2007 returns the ranking Fitted uses: CountryRank with
// Australia moved to rank 10 (see calibrated.go for the evidence).
func CountryRank2007() []string {
	var out []string
	for _, cc := range countryRank() {
		if cc != "AU" {
			out = append(out, cc)
		}
	}
	i := calAURank - 1
	return append(out[:i:i], append([]string{"AU"}, out[i:]...)...)
}
