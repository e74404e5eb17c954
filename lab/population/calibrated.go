package population

// The model's departures from the modern lists (serverlists_gen.go), calibrated to
// the paper's Table 2, where the 2007 population the paper measured differed
// from today's lists. Reproduce with
//
//	go run ./lab/sim/internal/calib            # fits of Modern, Fitted and FittedVantage
//	go run ./lab/sim/internal/calib -grid -spa 4.465 -kas 1,1.5,2 -k16 1,2,2.5,3
//	go run ./lab/sim/internal/calib -grid -sim=false -seeds 5 -aurank 5,8,10,12,15,20
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
// Latency residual per client city (vantageResidual in latency_gen.go, made by
// lab/population/internal/gen; VantageLatency and FittedVantage use it, Fitted
// and DefaultLatency keep the model before it). The model's RTT is a fit over all 59,887 WonderProxy
// city pairs times exp(e), e a random residual per (client, city); drawn
// from the global fit N(-0.003, 0.207), it made 10.8% of the CS:S servers
// unplayable from Frankfurt (seeds 1-10), 3.5 points of them in the US and
// 1.0 in Singapore, while WonderProxy measured every one of its 67 US cities at
// 80-184 ms from Frankfurt (89-193 ms from Zurich) and Singapore at 150 ms.
// The paper's near rows say the same: DE-CSS stopped at 98% of the full
// probe and CH-ET at 100%, which with a 100-probe window leaves room for
// only about 2.5-4% of servers at 200 ms or more. A client sees its own
// bias and spread per region, so e is now drawn from the fit over the
// client city's own paths to the server's region (median and 1.4826 MAD of
// the residual, 8 to 97 cities per region; 48 numbers, a fit, no measured
// pair is shipped). Against WonderProxy's per-country medians from the four
// client cities (not used in the fit), the model's |relative error| goes
// from 11/15/17/21% (median; 90th percentile 60/77/58/105%) to
// 12/10/16/18% (39/49/39/51%) for Melbourne/Tokyo/Zurich/Frankfurt. Over
// seeds 1-10 (go run ./lab/sim/internal/calib -seeds 10 -sim=false) the
// servers at 200 ms or more fall from 8.0% to 6.8% (ET, from Zurich) and
// from 10.8% to 5.9% (CS:S, from Frankfurt: Brazil 2.1, Australia 1.5,
// Singapore 1.0, New Zealand and Japan 0.3 each; calib -far -seeds 10), and those under 200 ms
// from Melbourne from 5.8% to 4.7% (ET) and 7.4% to 5.8% (CS:S). No
// country's share was changed to meet the near rows: what is left above the
// paper's 2.5-4% is Brazil (measured 192-278 ms from Frankfurt: unplayable
// in 2020 too, and no 2007 census says how many Brazilian servers there
// were) and Singapore, which the model still puts at about 230 ms because
// its Asia-Europe factor (1.36) is a median over slower Asian cities.
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
